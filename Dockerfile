# One image per Waterline binary:
#   docker build --build-arg BINARY=waterline-manager -t waterline-manager:dev .
# BINARY is one of waterline-manager, waterline-scheduler, waterline-agent,
# waterline.
FROM golang:1.26 AS build
ARG BINARY=waterline-manager
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 make build BINARIES=${BINARY} && cp bin/${BINARY} /out

# The binaries are static and talk only to the API server, whose CA comes
# with the service account: nothing else is needed at run time.
FROM scratch
COPY --from=build /out /usr/local/bin/waterline
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/waterline"]
