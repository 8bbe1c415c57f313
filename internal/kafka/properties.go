package kafka

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Property is a setting of a client properties file for one field of
// Config.
type Property struct {
	// Key is the property, such as "bootstrap.servers".
	Key string
	// Line is the line of the file that sets it, from 1.
	Line int
	// Field is the Config field it sets, such as "Brokers"; "" for a
	// property Hourglass accepts and needs nothing from, such as the class
	// of a login module that does what Hourglass does anyway.
	Field string
	// Value is the field's value, as its flag takes it: "a:9092,b:9092",
	// "true", "oauthbearer".
	Value string
}

// PropertyError is a problem of a client properties file: a line that is
// not key=value, a key Hourglass does not read, a value it does not take.
type PropertyError struct {
	Path string // the file; "" when parsed from a reader
	Line int
	Key  string // "" for a line without one
	Err  error
}

func (e *PropertyError) Error() string {
	where := "line " + strconv.Itoa(e.Line)
	if e.Path != "" {
		where = e.Path + ":" + strconv.Itoa(e.Line)
	}
	if e.Key == "" {
		return where + ": " + e.Err.Error()
	}
	return where + ": " + e.Key + ": " + e.Err.Error()
}

func (e *PropertyError) Unwrap() error { return e.Err }

// ReadProperties reads the client properties file path; see
// ParseProperties. Each *PropertyError names path.
func ReadProperties(path string) ([]Property, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	return parseProperties(f, path)
}

// ParseProperties parses a Kafka client properties file (client.properties)
// for the subset of keys Hourglass reads, in the order of its lines:
//
//	bootstrap.servers, client.id
//	security.protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
//	sasl.mechanism (or librdkafka's sasl.mechanisms): PLAIN, SCRAM-SHA-256,
//	  SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM
//	sasl.username, sasl.password, or sasl.jaas.config's username and
//	  password of the PLAIN and SCRAM login modules
//	sasl.oauthbearer.token.endpoint.url: a file:// URL, the token file
//	ssl.ca.location, ssl.certificate.location, ssl.key.location (PEM files)
//
// The login modules and callback handlers of OAUTHBEARER and AWS_MSK_IAM
// (IAMLoginModule and IAMClientCallbackHandler without options) and
// ssl.endpoint.identification.algorithm=https are accepted and need nothing.
//
// A line is key=value or key:value; blank lines and lines beginning with #
// or ! are skipped, and a line ending in a backslash continues on the next.
// A value is taken as written after the separator and leading white space:
// no other escapes. Every other key, a key set twice, a value out of its set
// and settings that contradict each other (a SASL mechanism with
// security.protocol SSL, say) are errors, each a *PropertyError naming the
// line: Hourglass does not guess what a setting it does not read meant.
func ParseProperties(r io.Reader) ([]Property, error) { return parseProperties(r, "") }

func parseProperties(r io.Reader, path string) ([]Property, error) {
	p := parser{path: path, seen: make(map[string]int)}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	n, start, logical := 0, 0, ""
	for sc.Scan() {
		n++
		text := sc.Text()
		if logical == "" {
			text = strings.TrimLeft(text, " \t\f")
			if text == "" || text[0] == '#' || text[0] == '!' {
				continue
			}
			start = n
		} else {
			text = strings.TrimLeft(text, " \t\f")
		}
		if continues(text) {
			logical += text[:len(text)-1]
			continue
		}
		p.line(start, logical+text)
		logical = ""
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if logical != "" {
		p.line(start, logical)
	}
	p.crossCheck()
	return p.props, errors.Join(p.errs...)
}

// continues reports whether a line ends in an odd number of backslashes.
func continues(s string) bool {
	n := len(s) - len(strings.TrimRight(s, `\`))
	return n%2 == 1
}

// parser holds what ParseProperties has read so far.
type parser struct {
	path  string // for the errors
	props []Property
	errs  []error
	seen  map[string]int // key to line
	// protocol, mechanism and module are the values of security.protocol,
	// sasl.mechanism and the mechanism of sasl.jaas.config's module, for
	// the checks of one against another; protocolLine and so on their
	// lines.
	protocol, mechanism, module           string
	protocolLine, mechanismLine, jaasLine int
	sslKey                                string // an ssl.*.location set
	sslLine                               int
}

func (p *parser) bad(line int, key, format string, args ...any) {
	p.errs = append(p.errs, &PropertyError{Path: p.path, Line: line, Key: key, Err: fmt.Errorf(format, args...)})
}

func (p *parser) set(line int, key, f, v string) {
	p.props = append(p.props, Property{Key: key, Line: line, Field: f, Value: v})
}

// line parses the logical line that begins on line n.
func (p *parser) line(n int, text string) {
	i := strings.IndexAny(text, "=:")
	if i < 0 {
		p.bad(n, "", "%q: want key=value", text)
		return
	}
	key := strings.TrimSpace(text[:i])
	v := strings.TrimLeft(text[i+1:], " \t\f")
	if key == "" {
		p.bad(n, "", "%q: no key before %q", text, text[i])
		return
	}
	if key == "sasl.mechanisms" { // librdkafka's name
		key = "sasl.mechanism"
	}
	if first, ok := p.seen[key]; ok {
		p.bad(n, key, "set again (first on line %d)", first)
		return
	}
	p.seen[key] = n
	p.key(n, key, v)
}

// pemKeys are the librdkafka keys of the PEM files, and their fields.
var pemKeys = map[string]string{
	"ssl.ca.location":          "TLSCAFile",
	"ssl.certificate.location": "TLSCertFile",
	"ssl.key.location":         "TLSKeyFile",
}

// key parses the value v of key on line n.
func (p *parser) key(n int, key, v string) {
	if f, ok := pemKeys[key]; ok {
		p.nonEmpty(n, key, f, v)
		p.sslKey, p.sslLine = key, n
		return
	}
	switch key {
	case "bootstrap.servers":
		p.nonEmpty(n, key, "Brokers", v)
	case "client.id":
		p.set(n, key, "ClientID", v)
	case "security.protocol":
		p.securityProtocol(n, v)
	case "sasl.mechanism":
		p.saslMechanism(n, v)
	case "sasl.username":
		p.nonEmpty(n, key, "SASLUser", v)
	case "sasl.password":
		p.nonEmpty(n, key, "SASLPassword", v)
	case "sasl.jaas.config":
		p.jaasConfig(n, v)
	case "sasl.oauthbearer.token.endpoint.url":
		p.tokenURL(n, v)
	case "sasl.login.callback.handler.class":
		p.class(n, key, v, "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler",
			"org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler")
	case "sasl.client.callback.handler.class":
		p.class(n, key, v, "software.amazon.msk.auth.iam.IAMClientCallbackHandler")
	case "ssl.endpoint.identification.algorithm":
		if !strings.EqualFold(v, "https") {
			p.bad(n, key, "%q: Hourglass always checks the broker's host name (https); --tls-server-name names another", v)
		}
	default:
		p.unknown(n, key)
	}
}

// unknown reports a key Hourglass does not read, with a hint for the keys
// of a Java client's connection settings.
func (p *parser) unknown(n int, key string) {
	switch {
	case strings.HasPrefix(key, "ssl.truststore.") || strings.HasPrefix(key, "ssl.keystore."):
		p.bad(n, key, "Java key stores are not read: give PEM files as ssl.ca.location, ssl.certificate.location and ssl.key.location")
	case key == "ssl.key.password":
		p.bad(n, key, "encrypted private keys are not read: give ssl.key.location an unencrypted PEM key")
	case strings.HasPrefix(key, "sasl.kerberos."):
		p.bad(n, key, "Kerberos (GSSAPI) is not supported")
	case strings.HasPrefix(key, "sasl.oauthbearer.") || strings.HasPrefix(key, "sasl.login."):
		p.bad(n, key, "not read: Hourglass reads the OAUTHBEARER token from a file (sasl.oauthbearer.token.endpoint.url=file:///path)")
	default:
		p.bad(n, key, "not a key Hourglass reads: it reads bootstrap.servers, client.id, security.protocol, sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, ssl.ca.location, ssl.certificate.location and ssl.key.location")
	}
}

func (p *parser) nonEmpty(n int, key, f, v string) {
	if v == "" {
		p.bad(n, key, "empty")
		return
	}
	p.set(n, key, f, v)
}

// class accepts the Java class v if it is one of classes: its job is done
// by Hourglass's own mechanism.
func (p *parser) class(n int, key, v string, classes ...string) {
	for _, c := range classes {
		if v == c {
			p.set(n, key, "", v)
			return
		}
	}
	p.bad(n, key, "%q: Hourglass accepts only %s, whose work it does itself", v, strings.Join(classes, " or "))
}

func (p *parser) securityProtocol(n int, v string) {
	proto := strings.ToUpper(v)
	switch proto {
	case "PLAINTEXT", "SASL_PLAINTEXT":
		p.set(n, "security.protocol", "TLS", "false")
	case "SSL", "SASL_SSL":
		p.set(n, "security.protocol", "TLS", "true")
	default:
		p.bad(n, "security.protocol", "%q: want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL", v)
		return
	}
	p.protocol, p.protocolLine = proto, n
}

func (p *parser) saslMechanism(n int, v string) {
	mech := strings.ToLower(v)
	switch mech {
	case SASLPlain, SASLScramSHA256, SASLScramSHA512, SASLOAuthBearer, SASLAWSMSKIAM:
	case "gssapi":
		p.bad(n, "sasl.mechanism", "Kerberos (GSSAPI) is not supported")
		return
	default:
		p.bad(n, "sasl.mechanism", "%q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or AWS_MSK_IAM", v)
		return
	}
	p.set(n, "sasl.mechanism", "SASLMechanism", mech)
	p.mechanism, p.mechanismLine = mech, n
}

// tokenURL takes a file:// token endpoint, the file a token is read from
// (KIP-768).
func (p *parser) tokenURL(n int, v string) {
	const key = "sasl.oauthbearer.token.endpoint.url"
	u, err := url.Parse(v)
	switch {
	case err != nil:
		p.bad(n, key, "%v", err)
	case u.Scheme != "file" || u.Path == "" || (u.Host != "" && u.Host != "localhost"):
		p.bad(n, key, "%q: Hourglass reads the token from a file, a file:///path URL; let a sidecar refresh the file from a token endpoint", v)
	default:
		p.set(n, key, "SASLOAuthTokenFile", u.Path)
	}
}

// jaasModules are the login modules of sasl.jaas.config, by the last
// element of their class name, and the mechanism each goes with.
var jaasModules = map[string]string{
	"PlainLoginModule":       SASLPlain,
	"ScramLoginModule":       "scram",
	"OAuthBearerLoginModule": SASLOAuthBearer,
	"IAMLoginModule":         SASLAWSMSKIAM,
}

// jaasConfig reads the module of a JAAS line and, for PLAIN and SCRAM, the
// username and password options:
//
//	org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
func (p *parser) jaasConfig(n int, v string) {
	const key = "sasl.jaas.config"
	class, opts, err := parseJAAS(v)
	if err != nil {
		p.bad(n, key, "%v", err)
		return
	}
	short := class[strings.LastIndexByte(class, '.')+1:]
	mech, ok := jaasModules[short]
	if !ok {
		p.bad(n, key, "login module %s is not supported: want PlainLoginModule, ScramLoginModule, OAuthBearerLoginModule or IAMLoginModule", class)
		return
	}
	p.module, p.jaasLine = mech, n
	if mech != SASLPlain && mech != "scram" {
		for _, k := range slices.Sorted(maps.Keys(opts)) {
			p.bad(n, key, "option %s of %s is not supported: see docs/security.md for the credentials of %s", k, short, mech)
		}
		p.set(n, key, "", "")
		return
	}
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		switch k {
		case "username":
			p.set(n, key, "SASLUser", opts[k])
		case "password":
			p.set(n, key, "SASLPassword", opts[k])
		default:
			p.bad(n, key, "option %s of %s is not supported: want username and password", k, short)
		}
	}
	for _, k := range []string{"username", "password"} {
		if _, ok := opts[k]; !ok {
			p.bad(n, key, "%s has no %s option", short, k)
		}
	}
}

// parseJAAS parses `class required k="v" ...;`: a JAAS login module entry
// with quoted option values.
func parseJAAS(s string) (class string, opts map[string]string, err error) {
	s = strings.TrimSpace(s)
	body, ok := strings.CutSuffix(s, ";")
	if !ok {
		return "", nil, errors.New("want `<login module class> required [option=\"value\" ...];`: no ';' at the end")
	}
	f := strings.Fields(body)
	if len(f) < 2 || f[1] != "required" {
		return "", nil, errors.New("want `<login module class> required [option=\"value\" ...];`")
	}
	class, rest := f[0], strings.TrimSpace(body[strings.Index(body, "required")+len("required"):])
	opts = make(map[string]string)
	for rest != "" {
		k, after, ok := strings.Cut(rest, "=")
		k = strings.TrimSpace(k)
		after = strings.TrimSpace(after)
		if !ok || k == "" || !strings.HasPrefix(after, `"`) {
			return "", nil, fmt.Errorf("option %q: want name=\"value\"", rest)
		}
		end := strings.IndexByte(after[1:], '"')
		if end < 0 {
			return "", nil, fmt.Errorf("option %s: no closing quote", k)
		}
		if _, dup := opts[k]; dup {
			return "", nil, fmt.Errorf("option %s given twice", k)
		}
		opts[k] = after[1 : 1+end]
		rest = strings.TrimSpace(after[end+2:])
	}
	return class, opts, nil
}

// crossCheck reports settings that contradict each other.
func (p *parser) crossCheck() {
	sasl := strings.HasPrefix(p.protocol, "SASL_")
	switch {
	case sasl && p.mechanism == "":
		p.bad(p.protocolLine, "security.protocol", "%s needs sasl.mechanism (Kafka's default, GSSAPI, is not supported)", p.protocol)
	case p.protocol != "" && !sasl && p.mechanism != "":
		p.bad(p.mechanismLine, "sasl.mechanism", "set, but security.protocol (line %d) is %s, without SASL: use SASL_%[2]s", p.protocolLine, p.protocol)
	}
	if p.protocol == "PLAINTEXT" || p.protocol == "SASL_PLAINTEXT" {
		if p.sslLine != 0 {
			p.bad(p.sslLine, p.sslKey, "set, but security.protocol (line %d) is %s, without TLS", p.protocolLine, p.protocol)
		}
	}
	if p.jaasLine == 0 {
		return
	}
	switch {
	case p.mechanism == "":
		p.bad(p.jaasLine, "sasl.jaas.config", "needs sasl.mechanism")
	case p.module != p.mechanism && (p.module != "scram" || !strings.HasPrefix(p.mechanism, "scram-")):
		p.bad(p.jaasLine, "sasl.jaas.config", "its login module is for %s, but sasl.mechanism (line %d) is %s", p.module, p.mechanismLine, p.mechanism)
	}
}

// ApplyProperties sets the fields of c that props set, except those for
// which keep returns true (nil keeps none): a command keeps the fields its
// flags or environment variables set. It returns the properties applied.
func (c *Config) ApplyProperties(props []Property, keep func(field string) bool) []Property {
	var applied []Property
	for _, pr := range props {
		if pr.Field == "" || (keep != nil && keep(pr.Field)) {
			continue
		}
		switch pr.Field {
		case "Brokers":
			c.Brokers = splitList(pr.Value)
		case "ClientID":
			c.ClientID = pr.Value
		case "TLS":
			c.TLS = pr.Value == "true"
		case "TLSCAFile":
			c.TLSCAFile = pr.Value
		case "TLSCertFile":
			c.TLSCertFile = pr.Value
		case "TLSKeyFile":
			c.TLSKeyFile = pr.Value
		case "SASLMechanism":
			c.SASLMechanism = pr.Value
		case "SASLUser":
			c.SASLUser = pr.Value
		case "SASLPassword":
			c.SASLPassword = pr.Value
		case "SASLOAuthTokenFile":
			c.SASLOAuthTokenFile = pr.Value
		default:
			panic("kafka: ApplyProperties: no field " + pr.Field)
		}
		applied = append(applied, pr)
	}
	return applied
}

// splitList splits a comma-separated list, trimming its items and dropping
// empty ones, as the commands' list flags do.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
