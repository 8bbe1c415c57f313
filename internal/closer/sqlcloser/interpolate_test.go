package sqlcloser_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// mysqlParams adds parameters ("charset=gbk&interpolateParams=true") to a
// go-sql-driver DSN.
func mysqlParams(dsn, params string) string {
	if params == "" {
		return dsn
	}
	if strings.Contains(dsn[strings.LastIndexByte(dsn, '/'):], "?") {
		return dsn + "&" + params
	}
	return dsn + "?" + params
}

// injection is the classic attack on client-side escaping in a multibyte
// character set: the escape '\' (0x5c) written before the quote completes
// the GBK or Big5 character 0xbf5c (0x955c in SJIS and CP932), and the
// quote then ends the string.
const injection = "\xbf' OR 1=1 -- "

// TestNewMySQLInterpolation: interpolateParams=true is accepted only with a
// connection character set in which escaping is safe; anything else is
// refused at New, naming the DSN setting, whether the DSN's charset says so
// or the server's session does.
func TestNewMySQLInterpolation(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		params string
		// wantIn are substrings of New's error; none means New works.
		wantIn []string
	}{
		{name: "default"},
		{name: "gbk without interpolation", params: "charset=gbk"},
		{name: "big5 without interpolation", params: "charset=big5"},
		{name: "interpolation with the server's default", params: "interpolateParams=true"},
		{name: "interpolation with utf8mb4", params: "charset=utf8mb4&interpolateParams=true"},
		{name: "interpolation with utf8", params: "charset=utf8&interpolateParams=true"},
		{name: "interpolation with latin1", params: "charset=latin1&interpolateParams=true"},
		{name: "interpolation with ascii", params: "charset=ascii&interpolateParams=true"},
		{name: "interpolation with binary", params: "charset=binary&interpolateParams=true"},
		{name: "gbk", params: "charset=gbk&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "charset=gbk"}},
		{name: "big5", params: "interpolateParams=true&charset=big5",
			wantIn: []string{"dsn: ", "interpolateParams=true", "charset=big5"}},
		{name: "sjis", params: "charset=sjis&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "charset=sjis"}},
		{name: "cp932", params: "charset=cp932&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "charset=cp932"}},
		{name: "gbk as the fallback", params: "charset=utf8mb4,gbk&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "charset=utf8mb4,gbk"}},
		{name: "gbk by a session variable", params: "character_set_client=gbk&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "character_set_client", "gbk"}},
		{name: "gbk by a session variable after the charset", params: "charset=utf8mb4&character_set_client=gbk&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "character_set_client", "gbk"}},
		// Found by New in the session, not in the DSN.
		{name: "gbk by a session variable spelled otherwise", params: "@@session.character_set_client=gbk&interpolateParams=true",
			wantIn: []string{"dsn: ", "interpolateParams=true", "character_set_client is gbk"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, sqlcloser.DriverMySQL)
			cfg := b.config()
			cfg.DSN.Value = mysqlParams(b.dsn, tt.params)
			if len(tt.wantIn) == 0 {
				c := newCloser(t, cfg)
				b.insert(t, 1, "UNPAID", time.Time{})
				if got := mustClose(t, c, "1"); got.Outcome != outcome.Closed {
					t.Errorf("close 1 = %+v", got)
				}
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := sqlcloser.New(ctx, cfg)
			if err == nil {
				_ = c.Stop()
				t.Fatal("New succeeded")
			}
			t.Log(err)
			if !contains(err.Error(), tt.wantIn...) {
				t.Errorf("error %q does not hold %q", err, tt.wantIn)
			}
		})
	}
}

// TestCloseMySQLCharsetInjection closes an id crafted to escape its quote
// under client-side escaping in a multibyte charset, on a string key
// column, with the connection in that charset: the close changes no row
// (the id is no order's), and an id the charset cannot hold is a permanent
// error.
func TestCloseMySQLCharsetInjection(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, params, id string }{
		{name: "gbk", params: "charset=gbk", id: injection},
		{name: "big5", params: "charset=big5", id: injection},
		{name: "sjis", params: "charset=sjis", id: "\x95' OR 1=1 -- "},
		{name: "cp932", params: "charset=cp932", id: "\x95' OR 1=1 -- "},
		{name: "utf8mb4 with interpolation", params: "charset=utf8mb4&interpolateParams=true", id: injection},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newBundle(t, sqlcloser.DriverMySQL)
			table := b.table + "_s"
			b.exec(t, `CREATE TABLE `+table+` (id VARCHAR(40) PRIMARY KEY, status VARCHAR(16) NOT NULL, closed_at DATETIME(6) NULL)`)
			b.drop(t, table)
			b.exec(t, `INSERT INTO `+table+` (id, status) VALUES ('ord-1', 'UNPAID'), ('ord-2', 'UNPAID'), ('42', 'UNPAID')`)
			cfg := b.config()
			cfg.Table = table
			cfg.DSN.Value = mysqlParams(b.dsn, tt.params)
			c := newCloser(t, cfg)

			res, err := closeOne(t, c, tt.id)
			t.Logf("close %q = %+v, %v", tt.id, res, err)
			if err == nil && res.Outcome != outcome.NotFound || err != nil && !closer.IsPermanent(err) {
				t.Errorf("close %q = %+v, %v; want not_found or a permanent error", tt.id, res, err)
			}
			rows, err := b.db.Query(`SELECT id, status FROM ` + table + ` ORDER BY id`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var id, status string
				if err := rows.Scan(&id, &status); err != nil {
					t.Fatal(err)
				}
				if status != "UNPAID" {
					t.Errorf("order %q is %s after closing %q", id, status, tt.id)
				}
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			// The connection still closes ordinary ids.
			if got := mustClose(t, c, "ord-2"); got.Outcome != outcome.Closed {
				t.Errorf("close ord-2 = %+v", got)
			}
		})
	}
}
