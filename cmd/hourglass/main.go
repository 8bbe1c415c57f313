// Command hourglass is the Hourglass tool: demo, bench, topics, and the
// router and canceller services. See `hourglass --help`.
package main

import "github.com/hourglass/hourglass/internal/app"

func main() { app.Main("hourglass", app.Hourglass) }
