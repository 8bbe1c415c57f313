package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Version is the manifest format version written in Header.Manifest.
const Version = 1

// Header is the first line of a manifest.
type Header struct {
	// Manifest is the format version, Version.
	Manifest int `json:"manifest"`
	// RunID tells the tasks of one run from every other run's.
	RunID string `json:"run_id"`
	// IDPrefix starts the id of every task of the run.
	IDPrefix string `json:"id_prefix"`
	// Prefix is the topic prefix the tasks were produced with
	// ("hourglass."); the outcomes topic is Prefix + "outcomes".
	Prefix string `json:"prefix"`
	// Tiers are the delay tiers the tasks were produced with ("1s,2s,5s").
	Tiers string `json:"tiers"`
	// StartedMs is when the manifest was created, unix milliseconds.
	StartedMs int64 `json:"started_ms"`
}

// Entry is one scheduled task that the broker acknowledged.
type Entry struct {
	// ID is the task id (the record key).
	ID string `json:"id"`
	// DueMs is when the task is due, unix milliseconds.
	DueMs int64 `json:"due_ms"`
	// ScheduledMs is when the record was built (its CreateTime), unix
	// milliseconds. A task due before it was scheduled can fire no earlier.
	ScheduledMs int64 `json:"scheduled_ms"`
	// Paid says the order was paid in the order store before the record was
	// produced, so its close must be skipped (detail PAID).
	Paid bool `json:"paid,omitempty"`
	// Shape is the kind of delay drawn ("past_due", "multi_hop"); empty
	// when the script gave none.
	Shape string `json:"shape,omitempty"`
}

// Writer appends entries to a manifest file. It is safe for concurrent use.
type Writer struct {
	mu   sync.Mutex
	path string
	f    *os.File
	w    *bufio.Writer
	n    int
	err  error // first write error; later calls return it
}

// Create creates (or truncates) the manifest file at path and writes h as
// its first line; h.Manifest is set to Version.
func Create(path string, h Header) (*Writer, error) {
	h.Manifest = Version
	b, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: header: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	w := &Writer{path: path, f: f, w: bufio.NewWriterSize(f, 64<<10)}
	if err := w.line(b); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) line(b []byte) error {
	if w.err != nil {
		return w.err
	}
	if _, err := w.w.Write(append(b, '\n')); err != nil {
		w.err = fmt.Errorf("manifest %s: write: %w", w.path, err)
	}
	return w.err
}

// Add appends e.
func (w *Writer) Add(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("manifest %s: entry %s: %w", w.path, e.ID, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return fmt.Errorf("manifest %s: closed", w.path)
	}
	if err := w.line(b); err != nil {
		return err
	}
	w.n++
	return nil
}

// Len returns how many entries were added.
func (w *Writer) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Path returns the file's path.
func (w *Writer) Path() string { return w.path }

// Flush writes buffered entries to the file.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil || w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("manifest %s: write: %w", w.path, err)
	}
	return w.err
}

// Close flushes, syncs and closes the file. Closing twice returns nil.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.err
	if err == nil {
		if ferr := w.w.Flush(); ferr != nil {
			err = fmt.Errorf("manifest %s: write: %w", w.path, ferr)
		} else if serr := w.f.Sync(); serr != nil {
			err = fmt.Errorf("manifest %s: sync: %w", w.path, serr)
		}
	}
	if cerr := w.f.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("manifest %s: close: %w", w.path, cerr)
	}
	w.f = nil
	return err
}

// Manifest is a manifest file read back.
type Manifest struct {
	Header  Header
	Entries []Entry
}

// maxLine bounds one manifest line; entries are well under 1 KiB.
const maxLine = 1 << 20

// Read reads a manifest. It reports, with its line number, a missing or
// unknown-version header, a line that is not an entry (unknown keys
// included), an entry without an id or due time, an id that does not start
// with the header's id prefix, and an id listed twice.
func Read(r io.Reader) (*Manifest, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	m := &Manifest{}
	seen := make(map[string]int)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			if err := strict(b, &m.Header); err != nil {
				return nil, fmt.Errorf("line 1: header: %w", err)
			}
			if m.Header.Manifest != Version {
				return nil, fmt.Errorf("line 1: header: manifest version %d, want %d", m.Header.Manifest, Version)
			}
			if m.Header.RunID == "" {
				return nil, errors.New("line 1: header: no run_id")
			}
			continue
		}
		if strings.TrimSpace(string(b)) == "" {
			continue
		}
		var e Entry
		if err := strict(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		switch {
		case e.ID == "":
			return nil, fmt.Errorf("line %d: entry has no id", line)
		case e.DueMs <= 0:
			return nil, fmt.Errorf("line %d: entry %s has no due_ms", line, e.ID)
		case !strings.HasPrefix(e.ID, m.Header.IDPrefix):
			return nil, fmt.Errorf("line %d: entry %s does not start with the run's id prefix %q", line, e.ID, m.Header.IDPrefix)
		}
		if first, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("line %d: entry %s already listed on line %d", line, e.ID, first)
		}
		seen[e.ID] = line
		m.Entries = append(m.Entries, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("empty manifest: no header line")
	}
	return m, nil
}

// ReadFile reads the manifest at path.
func ReadFile(path string) (*Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	m, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	return m, nil
}

// strict decodes one JSON object into v, rejecting unknown keys and
// trailing data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}
