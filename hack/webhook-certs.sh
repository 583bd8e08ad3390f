#!/usr/bin/env bash
# Makes a serving certificate for waterline-manager's webhooks
# (waterline-webhook.<namespace>.svc), stores it in the Secret the manager
# mounts, and sets the CA bundle of Waterline's webhook configurations.
# For clusters with cert-manager, use a Certificate and its CA injector
# instead. Re-run to rotate (valid for DAYS days).
#
# Usage: hack/webhook-certs.sh   (uses kubectl's current context; KUBECTL
# and KUBECONFIG are honoured; NAMESPACE defaults to waterline-system)
set -euo pipefail

KUBECTL=${KUBECTL:-kubectl}
NAMESPACE=${NAMESPACE:-waterline-system}
SERVICE=${SERVICE:-waterline-webhook}
SECRET=${SECRET:-waterline-webhook-certs}
DAYS=${DAYS:-825}

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
host="$SERVICE.$NAMESPACE.svc"

openssl req -x509 -newkey rsa:2048 -nodes -days "$DAYS" -subj "/CN=waterline-webhook-ca" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" -keyout "$dir/tls.key" -out "$dir/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s,DNS:%s.cluster.local,DNS:%s.%s\nextendedKeyUsage=serverAuth\n' \
  "$host" "$host" "$SERVICE" "$NAMESPACE" >"$dir/ext"
openssl x509 -req -in "$dir/tls.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
  -days "$DAYS" -extfile "$dir/ext" -out "$dir/tls.crt" 2>/dev/null

"$KUBECTL" create secret tls "$SECRET" -n "$NAMESPACE" --cert "$dir/tls.crt" --key "$dir/tls.key" \
  --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
echo "secret $NAMESPACE/$SECRET holds the serving certificate for $host"

bundle=$(base64 -w0 <"$dir/ca.crt")
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  for name in $("$KUBECTL" get "$kind" -o name 2>/dev/null | grep -E '/waterline-' || true); do
    count=$("$KUBECTL" get "$name" -o jsonpath='{range .webhooks[*]}x{end}' | wc -c)
    patch="["
    for ((i = 0; i < count; i++)); do
      [[ $i -gt 0 ]] && patch+=","
      patch+="{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$bundle\"}"
    done
    patch+="]"
    "$KUBECTL" patch "$name" --type json -p "$patch" >/dev/null
    echo "set the CA bundle of $name"
  done
done
