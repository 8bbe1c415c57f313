package kafka

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/aws"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hourglass/hourglass/internal/field"
)

// The environment variables of the AWS credentials that SASLAWSMSKIAM signs
// with, as the AWS SDKs name them.
const (
	EnvAWSAccessKeyID     = "AWS_ACCESS_KEY_ID"
	EnvAWSSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	EnvAWSSessionToken    = "AWS_SESSION_TOKEN" // optional: temporary credentials
)

// mechanism returns the SASL mechanism of c, nil without one. PLAIN and
// SCRAM read the password (file) once, here; OAUTHBEARER and AWS_MSK_IAM
// read their credentials at each authentication.
func (c *Config) mechanism() (sasl.Mechanism, error) {
	mech := strings.ToLower(c.SASLMechanism)
	switch mech {
	case "":
		return nil, nil
	case SASLOAuthBearer:
		return oauthTokenFile(c.SASLOAuthTokenFile), nil
	case SASLAWSMSKIAM:
		return awsEnv(), nil
	}
	pass := c.SASLPassword
	if c.SASLPasswordFile != "" {
		p, err := readPasswordFile(c.SASLPasswordFile)
		if err != nil {
			return nil, field.Errorf("SASLPasswordFile", "%v", err)
		}
		pass = p
	}
	switch mech {
	case SASLScramSHA256:
		return scram.Auth{User: c.SASLUser, Pass: pass}.AsSha256Mechanism(), nil
	case SASLScramSHA512:
		return scram.Auth{User: c.SASLUser, Pass: pass}.AsSha512Mechanism(), nil
	default:
		return plain.Auth{User: c.SASLUser, Pass: pass}.AsMechanism(), nil
	}
}

// oauthTokenFile is OAUTHBEARER with the token read from path at each
// authentication, so that a token that a sidecar refreshes in place (a
// projected service account token, a Vault agent's file) is the one sent.
// Reading it then is enough: kgo authenticates each new connection and, when
// the broker gives the session a lifetime (connections.max.reauth.ms,
// SessionLifetimeMillis in the SASLAuthenticate response), authenticates the
// connection again shortly before that lifetime ends. An unreadable or empty
// file fails that authentication, naming the file; kgo retries it.
func oauthTokenFile(path string) sasl.Mechanism {
	return oauth.Oauth(func(context.Context) (oauth.Auth, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return oauth.Auth{}, fmt.Errorf("sasl oauthbearer: read the token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return oauth.Auth{}, fmt.Errorf("sasl oauthbearer: token file %s: empty", path)
		}
		return oauth.Auth{Token: tok}, nil
	})
}

// awsEnv is AWS_MSK_IAM signed with the credentials of the environment
// (EnvAWSAccessKeyID, EnvAWSSecretAccessKey and, for temporary credentials,
// EnvAWSSessionToken), read at each authentication like oauthTokenFile's
// token. The region is the broker host's (*.amazonaws.com), else AWS_REGION
// or AWS_DEFAULT_REGION. Nothing else of the AWS credential chain (profiles,
// web identity, container or instance credentials) is read: that needs the
// AWS SDK.
func awsEnv() sasl.Mechanism {
	return aws.ManagedStreamingIAM(func(context.Context) (aws.Auth, error) {
		if err := checkAWSEnv(); err != nil {
			return aws.Auth{}, fmt.Errorf("sasl aws_msk_iam: %w", err)
		}
		return aws.Auth{
			AccessKey:    os.Getenv(EnvAWSAccessKeyID),
			SecretKey:    os.Getenv(EnvAWSSecretAccessKey),
			SessionToken: os.Getenv(EnvAWSSessionToken),
		}, nil
	})
}

// checkAWSEnv returns which AWS credential the environment lacks.
func checkAWSEnv() error {
	var missing []string
	for _, v := range []string{EnvAWSAccessKeyID, EnvAWSSecretAccessKey} {
		if os.Getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not set in the environment", strings.Join(missing, " and "))
	}
	return nil
}
