package embedded

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// ListenPort checks an embedded broker address: loopback only (kfake
// listens on 127.0.0.1), with a port (0 picks a free one).
func ListenPort(listen string) (int, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, fmt.Errorf("%q: want 127.0.0.1:port", listen)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return 0, fmt.Errorf("%q: the embedded broker listens on loopback only (127.0.0.1)", listen)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return 0, fmt.Errorf("%q: bad port", listen)
	}
	return port, nil
}

// StartBroker starts an embedded Kafka broker (kfake) on 127.0.0.1:port (0
// picks a free port), with opts, and returns it with the address it
// listens on.
func StartBroker(port int, opts ...kfake.Opt) (*kfake.Cluster, string, error) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.Ports(port), kfake.GroupMinSessionTimeout(time.Second)}, opts...)...)
	if err != nil {
		return nil, "", fmt.Errorf("embedded broker on 127.0.0.1:%d: %w (is another broker running there? pass --listen 127.0.0.1:0 for a free port)", port, err)
	}
	return c, c.ListenAddrs()[0], nil
}
