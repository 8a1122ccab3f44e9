package runtimes

import (
	"archive/tar"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/moby/moby/client"
)

// Seed implements Member: fill writes the data dir on this machine, into a staging directory;
// the member's first start copies it into the member's volume before the container runs.
func (m *dockerMember) Seed(_ context.Context, fill func(dataDir string) error) error {
	if m.current() != nil {
		return fmt.Errorf("seed %s: it has run already", m.spec.Name)
	}
	staging, err := os.MkdirTemp("", "upgradelab-seed-"+m.spec.Name+"-")
	if err != nil {
		return err
	}
	if err := fill(filepath.Join(staging, "data")); err != nil {
		os.RemoveAll(staging)
		return err
	}
	m.mu.Lock()
	m.seed = staging
	m.mu.Unlock()
	return nil
}

// takeSeed returns the staged data dir not yet copied in ("" when none) and forgets it.
func (m *dockerMember) takeSeed() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.seed
	m.seed = ""
	return s
}

// copySeed copies the staged directory's data dir into the created (not started) container's
// volume, streamed as a tar, and removes the staging directory.
func (m *dockerMember) copySeed(ctx context.Context, containerID, staging string) error {
	defer os.RemoveAll(staging)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarTree(pw, staging)) }()
	_, err := m.d.cli.CopyToContainer(ctx, containerID, client.CopyToContainerOptions{DestinationPath: dataMount, Content: pr})
	pr.CloseWithError(err)
	if err != nil {
		return fmt.Errorf("copy the seeded data dir into %s's volume: %w", m.spec.Name, err)
	}
	return nil
}

// tarTree writes every directory and regular file under root, with paths relative to it.
func tarTree(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.IsDir() && !info.Mode().IsRegular() {
			return fmt.Errorf("%s: only directories and regular files are seeded", path)
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
