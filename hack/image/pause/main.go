// Command pause is the pod sandbox of the test node's images: it sleeps
// until SIGTERM or SIGINT and exits at once then (a shell's sleep as PID 1
// ignores SIGTERM, so every pod stop would wait out its grace period).
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGTERM, syscall.SIGINT)
	<-c
}
