package cli_test

import (
	"fmt"
	"os"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
)

func ExampleFlagSet() {
	os.Setenv("EXAMPLE_MAX_DELAY", "90s")
	defer os.Unsetenv("EXAMPLE_MAX_DELAY")

	var (
		brokers  []string
		maxDelay time.Duration
	)
	fs := cli.NewFlagSet("router", "usage: router [flags]")
	fs.StringsVar(&brokers, "brokers", "EXAMPLE_BROKERS", []string{"127.0.0.1:9092"}, "seed `host:port,...`")
	fs.DurationVar(&maxDelay, "max-delay", "EXAMPLE_MAX_DELAY", time.Minute, "largest delay")
	if err := fs.Parse([]string{"--brokers", "k1:9092,k2:9092"}); err != nil {
		fmt.Println(err)
		return
	}
	fs.PrintConfig(os.Stdout)
	fmt.Println(fs.Name("max-delay"))
	// Output:
	// --brokers=k1:9092,k2:9092 (flag)
	// --max-delay=1m30s (env)
	// --max-delay (EXAMPLE_MAX_DELAY)
}
