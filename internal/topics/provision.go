package topics

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ProvisionTimeout bounds Provision and ProvisionOn: long enough for a
// broker that is starting, short enough that a wrong address fails a start.
const ProvisionTimeout = 60 * time.Second

// Provision creates (or, with create false, only checks) the topics of
// specs on a short-lived client and reports what it found.
func Provision(ctx context.Context, opts []kgo.Opt, specs []Spec, create bool) ([]Status, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return ProvisionOn(ctx, cl, specs, create)
}

// ProvisionOn is Provision on the client cl: Ensure, bounded by a minute.
func ProvisionOn(ctx context.Context, cl *kgo.Client, specs []Spec, create bool) ([]Status, error) {
	ctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
	defer cancel()
	st, err := Ensure(ctx, kadm.NewClient(cl), specs, create)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	return st, nil
}

// Missing returns the topics of names that do not exist.
func Missing(ctx context.Context, adm *kadm.Client, names []string) ([]string, error) {
	details, err := listTopics(ctx, adm, names)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range names {
		if d, ok := details[n]; !ok || d.Err != nil {
			missing = append(missing, n)
		}
	}
	return slices.Clip(missing), nil
}
