package recordercmd

import (
	"cmp"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/chflags"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// recorderFields are the flags of recorder.Config's fields.
var recorderFields = cli.Fields{
	"Topic":               "outcomes-topic",
	"Group":               "group",
	"BatchRows":           "batch-rows",
	"FlushInterval":       "flush-interval",
	"InsertTimeout":       "insert-timeout",
	"RetryMin":            "retry-min",
	"RetryMax":            "retry-max",
	"ShutdownTimeout":     "shutdown-timeout",
	"SessionTimeout":      "session-timeout",
	"OutcomesKey":         "outcomes-key-file",
	"Index.Prefix":        "topic-prefix",
	"Index.Cancellations": "cancellations-topic",
	"Index.DeadLetters":   "dlq-topic",
}

// sectionClickHouse is the section of the recorder's help with the
// --clickhouse-* flags and the migrations.
const sectionClickHouse = "ClickHouse"

// sections puts the recorder's flags into the sections of its help, the
// ClickHouse address among the Essential flags.
func sections(fs *cli.FlagSet) {
	fs.Essential("clickhouse-addr", "topic-prefix")
	fs.Essential("index")
	fs.Move(service.SectionTopics, "outcomes-topic", "cancellations-topic", "dlq-topic")
	fs.Move(service.SectionLimits, "batch-rows")
	fs.Move(service.SectionTiming, "flush-interval", "insert-timeout", "retry-min", "retry-max", "shutdown-timeout")
	fs.Move(service.SectionKafka, "group")
	fs.Move(service.SectionAdvanced, "outcomes-key-file")
}

// register registers the flags of the fields of k on fs, each with its
// HOURGLASS_* environment variable, and stores the defaults in k; Topic
// stays empty, for check to derive from --topic-prefix. SessionTimeout and
// OutcomesKey have no flag here: they come from the flag every service
// shares and from the key file.
func register(fs *cli.FlagSet, k *recorder.Config) {
	env := cli.Env
	fs.StringVar(&k.Topic, "outcomes-topic", env("outcomes-topic"), "", "`topic` of outcome events (default <prefix>outcomes)")
	fs.StringVar(&k.Group, "group", env("group"), "", flags.GroupUsage("recorder"))
	fs.IntVar(&k.BatchRows, "batch-rows", env("batch-rows"), recorder.DefaultBatchRows, "records (outcome events and records indexed) per batch at most")
	fs.DurationVar(&k.FlushInterval, "flush-interval", env("flush-interval"), recorder.DefaultFlushInterval, "longest wait of an event before its batch is inserted")
	fs.DurationVar(&k.InsertTimeout, "insert-timeout", env("insert-timeout"), recorder.DefaultInsertTimeout, "bound on one insert attempt")
	fs.DurationVar(&k.RetryMin, "retry-min", env("retry-min"), recorder.DefaultRetryMin, "wait after a failed insert; doubled at each failure")
	fs.DurationVar(&k.RetryMax, "retry-max", env("retry-max"), recorder.DefaultRetryMax, "longest wait between insert attempts")
	fs.DurationVar(&k.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), recorder.DefaultShutdownTimeout, "bound on a graceful stop (the last insert and commit)")
}

// check completes c.Recorder from the flags after fs.Parse (the topic, the
// session timeout, the key) and returns every problem, each naming its
// flag.
func (c *Config) check() error {
	k := &c.Recorder
	if k.Topic == "" {
		k.Topic = tiers.OutcomesTopic(c.Prefix)
	}
	k.SessionTimeout = c.SessionTimeout
	k.Index = nil
	if c.Index {
		x := c.IndexTopics
		x.Prefix = c.Prefix
		x.Cancellations = cmp.Or(x.Cancellations, tiers.CancellationsTopic(c.Prefix))
		x.DeadLetters = cmp.Or(x.DeadLetters, tiers.DeadLetterTopic(c.Prefix))
		k.Index = &x
	}
	var errs cli.Problems
	errs.Join(recorderFields.Flags(k.Validate(), nil))
	key, err := service.ReadKey(c.OutcomesKeyFile)
	if err != nil {
		errs.Add("outcomes-key-file", "%v", err)
	}
	k.OutcomesKey = key
	if c.MigrateOnly && !c.Migrate {
		errs.Add("migrate-only", "contradicts --migrate=false")
	}
	if c.Prefix == "" {
		errs.Add("topic-prefix", "must not be empty")
	}
	errs.Join(chflags.Check(c.ClickHouse))
	return errs.Err()
}
