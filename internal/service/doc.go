// Package service holds what every Hourglass command shares: [Main] and its
// exit codes (0 after a clean stop or --help, 2 for a [UsageError], 1 for
// any other error), --version ([VersionRequested], handled by Main before
// any other flag), [Common], the flags of the services (Kafka connection,
// logging, the HTTP address, --check-config, topic creation, session
// timeout), the logger, [ServeHTTP] (/healthz, /readyz, /metrics and,
// with --pprof, Go's profiles), [Parse] with its --check-config handling,
// the topics a service provisions or waits for at its start
// ([EnsureTopics], [CheckDelayTopics]) and signing key files.
//
// It links no command: each command is its own package under
// internal/cmd, so that a binary carries only the commands it runs. No
// library imports it.
package service
