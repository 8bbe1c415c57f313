// Command canceller closes due Hourglass tasks. See `canceller --help`.
package main

import (
	"github.com/hourglass/hourglass/internal/cmd/cancellercmd"
	"github.com/hourglass/hourglass/internal/service"
)

func main() { service.Main("canceller", cancellercmd.Run) }
