package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// record is what a soak measured: the run's settings and each side's samples. With --samples it
// is saved as JSON after every window, so an interrupted run keeps what it measured and
// --report-from writes the report and plot again from it (another judgement of the same hour)
// without running the load again.
type record struct {
	Date        string        // the run's day, UTC
	Hours       float64       // the length asked for
	Took        time.Duration // how long the load ran
	Nodes       int
	Sample      time.Duration // one window per sample
	DefragEvery time.Duration
	Compaction  time.Duration
	OursBuiltAt string // the Git SHA our binary reported
	Sides       []recordSide
}

// recordSide is one implementation's samples: ours first, then upstream's.
type recordSide struct {
	Label   string
	Samples []sample
}

// save writes r to path whole: through a file beside it, renamed over it.
func (r record) save(path string) error {
	b, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("saving the samples: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("saving the samples: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("saving the samples: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}

// loadRecord reads a record saved by a run with --samples.
func loadRecord(path string) (record, error) {
	var r record
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Sides) != 2 {
		return r, fmt.Errorf("%s: %d sides, want ours and upstream's", path, len(r.Sides))
	}
	return r, nil
}
