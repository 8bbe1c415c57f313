// Command hourglass is the Hourglass tool: demo, bench, topics, and the
// router and canceller services. See `hourglass --help`.
package main

import (
	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/service"
)

func main() { service.Main("hourglass", hourglasscmd.Run) }
