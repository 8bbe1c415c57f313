package version_test

import (
	"fmt"

	"github.com/hourglass/hourglass/internal/version"
)

func ExampleInfo_String() {
	info := version.Info{
		Version:   "v1.2.3",
		Revision:  "0123456789abcdef0123456789abcdef01234567",
		Time:      "2026-11-24T04:17:10Z",
		GoVersion: "go1.26.8",
		Platform:  "linux/amd64",
	}
	fmt.Println("router", info)
	// Output:
	// router v1.2.3 (revision 0123456789abcdef0123456789abcdef01234567, 2026-11-24T04:17:10Z) go1.26.8 linux/amd64
}
