// Command verify checks a load test run against the outcomes topic; see
// package verify.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/hourglass/hourglass/loadtest/verify"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := verify.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
