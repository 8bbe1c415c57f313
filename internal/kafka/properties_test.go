package kafka

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseProperties(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		file  string
		want  []Property
		wantE []string // the whole message of each error, in order
	}{
		{
			name: "SCRAM over TLS, comments, blank lines, both separators",
			file: "# Confluent Cloud style\n\n! a comment\nbootstrap.servers=kafka-0:9093, kafka-1:9093\n" +
				"security.protocol = SASL_SSL\nsasl.mechanism: SCRAM-SHA-512\nsasl.username=alice\nsasl.password=p=ss:w#rd \n" +
				"ssl.ca.location=/etc/kafka/ca.pem\nclient.id=orders\n",
			want: []Property{
				{"bootstrap.servers", 4, "Brokers", "kafka-0:9093, kafka-1:9093"},
				{"security.protocol", 5, "TLS", "true"},
				{"sasl.mechanism", 6, "SASLMechanism", "scram-sha-512"},
				{"sasl.username", 7, "SASLUser", "alice"},
				{"sasl.password", 8, "SASLPassword", "p=ss:w#rd "},
				{"ssl.ca.location", 9, "TLSCAFile", "/etc/kafka/ca.pem"},
				{"client.id", 10, "ClientID", "orders"},
			},
		},
		{
			name: "JAAS PLAIN on continued lines, librdkafka's sasl.mechanisms",
			file: "security.protocol=SASL_PLAINTEXT\nsasl.mechanisms=PLAIN\n" +
				"sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\\n" +
				"    username=\"bob\" \\\n    password=\"s e;cret\";\n",
			want: []Property{
				{"security.protocol", 1, "TLS", "false"},
				{"sasl.mechanism", 2, "SASLMechanism", "plain"},
				{"sasl.jaas.config", 3, "SASLPassword", "s e;cret"},
				{"sasl.jaas.config", 3, "SASLUser", "bob"},
			},
		},
		{
			name: "MSK IAM as AWS documents it",
			file: "security.protocol=SASL_SSL\nsasl.mechanism=AWS_MSK_IAM\n" +
				"sasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required;\n" +
				"sasl.client.callback.handler.class=software.amazon.msk.auth.iam.IAMClientCallbackHandler\n",
			want: []Property{
				{"security.protocol", 1, "TLS", "true"},
				{"sasl.mechanism", 2, "SASLMechanism", "aws_msk_iam"},
				{"sasl.jaas.config", 3, "", ""},
				{"sasl.client.callback.handler.class", 4, "", "software.amazon.msk.auth.iam.IAMClientCallbackHandler"},
			},
		},
		{
			name: "OAUTHBEARER from a file URL, mutual TLS without SASL",
			file: "security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n" +
				"sasl.oauthbearer.token.endpoint.url=file:///var/run/secrets/kafka/token\n" +
				"ssl.endpoint.identification.algorithm=https\n",
			want: []Property{
				{"security.protocol", 1, "TLS", "true"},
				{"sasl.mechanism", 2, "SASLMechanism", "oauthbearer"},
				{"sasl.oauthbearer.token.endpoint.url", 3, "SASLOAuthTokenFile", "/var/run/secrets/kafka/token"},
			},
		},
		{
			name: "mutual TLS",
			file: "security.protocol=SSL\nssl.certificate.location=/c.pem\nssl.key.location=/k.pem\n",
			want: []Property{
				{"security.protocol", 1, "TLS", "true"},
				{"ssl.certificate.location", 2, "TLSCertFile", "/c.pem"},
				{"ssl.key.location", 3, "TLSKeyFile", "/k.pem"},
			},
		},
		{name: "empty file"},
		{
			name: "unknown and unsupported keys, each with its line",
			file: "acks=all\nssl.truststore.location=/t.jks\nsasl.kerberos.service.name=kafka\nsasl.login.refresh.buffer.seconds=300\nssl.key.password=x\n",
			wantE: []string{
				"line 1: acks: not a key Hourglass reads: it reads bootstrap.servers, client.id, security.protocol, sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, ssl.ca.location, ssl.certificate.location and ssl.key.location",
				"line 2: ssl.truststore.location: Java key stores are not read: give PEM files as ssl.ca.location, ssl.certificate.location and ssl.key.location",
				"line 3: sasl.kerberos.service.name: Kerberos (GSSAPI) is not supported",
				"line 4: sasl.login.refresh.buffer.seconds: not read: Hourglass reads the OAUTHBEARER token from a file (sasl.oauthbearer.token.endpoint.url=file:///path)",
				"line 5: ssl.key.password: encrypted private keys are not read: give ssl.key.location an unencrypted PEM key",
			},
		},
		{
			name: "bad lines and values",
			file: "no separator\n=value\nbootstrap.servers=\nsecurity.protocol=TLS\nsasl.mechanism=GSSAPI\nclient.id=a\nclient.id=b\n" +
				"sasl.oauthbearer.token.endpoint.url=https://idp.example/token\nssl.endpoint.identification.algorithm=\n",
			wantE: []string{
				`line 1: "no separator": want key=value`,
				`line 2: "=value": no key before '='`,
				"line 3: bootstrap.servers: empty",
				`line 4: security.protocol: "TLS": want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL`,
				"line 5: sasl.mechanism: Kerberos (GSSAPI) is not supported",
				"line 7: client.id: set again (first on line 6)",
				`line 8: sasl.oauthbearer.token.endpoint.url: "https://idp.example/token": Hourglass reads the token from a file, a file:///path URL; let a sidecar refresh the file from a token endpoint`,
				`line 9: ssl.endpoint.identification.algorithm: "": Hourglass always checks the broker's host name (https); --tls-server-name names another`,
			},
		},
		{
			name: "settings that contradict each other",
			file: "security.protocol=SSL\nsasl.mechanism=PLAIN\n" +
				"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"p\";\n",
			wantE: []string{
				"line 2: sasl.mechanism: set, but security.protocol (line 1) is SSL, without SASL: use SASL_SSL",
				"line 3: sasl.jaas.config: its login module is for scram, but sasl.mechanism (line 2) is plain",
			},
		},
		{
			name: "SASL protocol without a mechanism, PEM file in plaintext",
			file: "security.protocol=SASL_PLAINTEXT\nssl.ca.location=/ca.pem\n",
			wantE: []string{
				"line 1: security.protocol: SASL_PLAINTEXT needs sasl.mechanism (Kafka's default, GSSAPI, is not supported)",
				"line 2: ssl.ca.location: set, but security.protocol (line 1) is SASL_PLAINTEXT, without TLS",
			},
		},
		{
			name: "JAAS that Hourglass does not read",
			file: "sasl.mechanism=AWS_MSK_IAM\nsasl.jaas.config=software.amazon.msk.auth.iam.IAMLoginModule required awsRoleArn=\"arn:aws:iam::1:role/r\";\n" +
				"sasl.client.callback.handler.class=com.example.Handler\n",
			wantE: []string{
				"line 2: sasl.jaas.config: option awsRoleArn of IAMLoginModule is not supported: see docs/security.md for the credentials of aws_msk_iam",
				`line 3: sasl.client.callback.handler.class: "com.example.Handler": Hourglass accepts only software.amazon.msk.auth.iam.IAMClientCallbackHandler, whose work it does itself`,
			},
		},
		{
			name:  "JAAS syntax",
			file:  "sasl.mechanism=PLAIN\nsasl.jaas.config=PlainLoginModule required username=\"u\"\n",
			wantE: []string{"line 2: sasl.jaas.config: want `<login module class> required [option=\"value\" ...];`: no ';' at the end"},
		},
		{
			name: "JAAS without a password, JAAS without a mechanism",
			file: "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"u\";\n",
			wantE: []string{
				"line 1: sasl.jaas.config: PlainLoginModule has no password option",
				"line 1: sasl.jaas.config: needs sasl.mechanism",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseProperties(strings.NewReader(tt.file))
			var msgs []string
			for _, e := range joined(err) {
				msgs = append(msgs, e.Error())
			}
			if !slices.Equal(msgs, tt.wantE) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(msgs, "\n"), strings.Join(tt.wantE, "\n"))
			}
			if tt.wantE == nil && !slices.Equal(got, tt.want) {
				t.Errorf("properties:\n%+v\nwant:\n%+v", got, tt.want)
			}
		})
	}
}

// TestReadProperties: errors name the file, and the properties applied
// make a Config that connects with the file's settings, except the fields
// kept.
func TestReadProperties(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "client.properties")
	if err := os.WriteFile(path, []byte("bootstrap.servers=k:9093\nsecurity.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"+
		"sasl.oauthbearer.token.endpoint.url=file:///run/token\nclient.id=file-id\nlinger.ms=5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadProperties(path); err == nil || err.Error() != path+":6: linger.ms: not a key Hourglass reads: it reads bootstrap.servers, client.id, security.protocol, sasl.mechanism, sasl.username, sasl.password, sasl.jaas.config, sasl.oauthbearer.token.endpoint.url, ssl.ca.location, ssl.certificate.location and ssl.key.location" {
		t.Errorf("ReadProperties error %v", err)
	}
	if _, err := ReadProperties(filepath.Join(dir, "missing")); err == nil || !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}

	props, err := ParseProperties(strings.NewReader("bootstrap.servers=k:9093, k2:9093\nsecurity.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n" +
		"sasl.oauthbearer.token.endpoint.url=file:///run/token\nclient.id=file-id\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Brokers: []string{DefaultBrokers}, ClientID: "flag-id"}
	applied := c.ApplyProperties(props, func(f string) bool { return f == "ClientID" })
	want := Config{Brokers: []string{"k:9093", "k2:9093"}, ClientID: "flag-id", TLS: true, SASLMechanism: "oauthbearer", SASLOAuthTokenFile: "/run/token"}
	if !slices.Equal(c.Brokers, want.Brokers) || c.ClientID != want.ClientID || c.TLS != want.TLS ||
		c.SASLMechanism != want.SASLMechanism || c.SASLOAuthTokenFile != want.SASLOAuthTokenFile || len(applied) != 4 {
		t.Errorf("applied %d properties: %+v\nwant %+v", len(applied), c, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
