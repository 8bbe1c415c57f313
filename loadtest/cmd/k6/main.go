// Command k6 is k6 with the k6/x/hourglass extension built in.
package main

import (
	"go.k6.io/k6/cmd"

	_ "github.com/hourglass/hourglass/loadtest/xhourglass"
)

func main() { cmd.Execute() }
