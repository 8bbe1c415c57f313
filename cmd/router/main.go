// Command router moves Hourglass delay records to their targets when due.
// See `router --help`.
package main

import "github.com/hourglass/hourglass/internal/app"

func main() { app.Main("router", app.Router) }
