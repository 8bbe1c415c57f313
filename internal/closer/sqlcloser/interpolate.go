package sqlcloser

import (
	"context"
	"fmt"
	"net/url"
	"strings"
)

// safeCharsets are the MySQL connection character sets in which
// go-sql-driver/mysql's client-side interpolation (interpolateParams=true)
// is safe: in them no multibyte character ends in the byte '\' (0x5c).
// In GBK, Big5, SJIS, CP932 and GB2312 one can: the id "\xbf' OR 1=1 -- "
// is escaped to \xbf\' OR ..., the server reads \xbf\ as one character,
// and the quote then ends the string literal.
var safeCharsets = map[string]bool{
	"utf8": true, "utf8mb3": true, "utf8mb4": true,
	"latin1": true, "ascii": true, "binary": true,
}

// interpolationAdvice ends the errors about an unsafe interpolation.
const interpolationAdvice = "interpolateParams=true escapes the task id into the statement text, which is safe only in " +
	"utf8, utf8mb4, utf8mb3, latin1, ascii or binary (in a multibyte charset such as gbk an id can end its string literal); " +
	"set charset=utf8mb4, or drop interpolateParams: the closer runs prepared statements, one round trip each"

// checkInterpolationDSN reports a go-sql-driver DSN that sets
// interpolateParams=true together with a charset, or a
// character_set_client session variable, outside safeCharsets. Whatever
// the DSN says, New checks the session's character set too.
func checkInterpolationDSN(dsn string) error {
	params := dsnParams(dsn)
	if cs, ok := params["charset"]; ok {
		// A list is tried in order: any of them may be the one used.
		for _, name := range strings.Split(cs, ",") {
			if !safeCharsets[strings.ToLower(strings.TrimSpace(name))] {
				return fmt.Errorf("interpolateParams=true with charset=%s: %s", cs, interpolationAdvice)
			}
		}
	}
	for k, v := range params {
		// Other parameters are session variables, set as given.
		if strings.EqualFold(k, "character_set_client") && !safeCharsets[strings.ToLower(strings.Trim(v, "'\" "))] {
			return fmt.Errorf("interpolateParams=true with %s=%s: %s", k, v, interpolationAdvice)
		}
	}
	return nil
}

// dsnParams returns the parameters of a go-sql-driver DSN, read as the
// driver reads them: after the first '?' that follows the last '/'.
func dsnParams(dsn string) map[string]string {
	params := map[string]string{}
	slash := strings.LastIndexByte(dsn, '/')
	if slash < 0 {
		return params
	}
	_, query, ok := strings.Cut(dsn[slash+1:], "?")
	if !ok {
		return params
	}
	for _, kv := range strings.Split(query, "&") {
		k, v, _ := strings.Cut(kv, "=")
		if u, err := url.QueryUnescape(v); err == nil {
			v = u
		}
		params[k] = v
	}
	return params
}

// checkInterpolation reports a session character set outside safeCharsets
// when the DSN sets interpolateParams=true: the DSN's charset and session
// variables were checked by Validate, but the server may set another one
// (character_set_client in its configuration, init_connect,
// skip-character-set-client-handshake).
func (c *Closer) checkInterpolation(ctx context.Context) error {
	var cs string
	if err := c.db.QueryRowContext(ctx, "SELECT @@character_set_client").Scan(&cs); err != nil {
		return fmt.Errorf("interpolateParams=true: look up the session's character_set_client: %w", err)
	}
	if !safeCharsets[strings.ToLower(cs)] {
		return fmt.Errorf("interpolateParams=true, and the session's character_set_client is %s "+
			"(from the DSN's charset or session variables, or the server's settings): %s", cs, interpolationAdvice)
	}
	return nil
}
