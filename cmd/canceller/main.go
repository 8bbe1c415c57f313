// Command canceller closes due Hourglass tasks. See `canceller --help`.
package main

import "github.com/hourglass/hourglass/internal/app"

func main() { app.Main("canceller", app.Canceller) }
