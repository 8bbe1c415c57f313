// Command router moves Hourglass delay records to their targets when due.
// See `router --help`.
package main

import (
	"github.com/hourglass/hourglass/internal/cmd/routercmd"
	"github.com/hourglass/hourglass/internal/service"
)

func main() { service.Main("router", routercmd.Run) }
