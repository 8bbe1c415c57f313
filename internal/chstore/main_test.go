package chstore_test

import (
	"testing"

	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

func TestMain(m *testing.M) { chtest.Main(m, "chstore", nil) }
