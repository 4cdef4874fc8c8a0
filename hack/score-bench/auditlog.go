package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// auditLog reads what the API server's audit log gained since the last read. The API server
// rotates the log at 100 MB (--audit-log-maxsize; lumberjack renames the full file to
// audit-<time>.log and begins a new one), which a large run crosses: a rotation since the last
// read is followed through the rest of the renamed file, any later ones, then the new file.
type auditLog struct {
	path string
	// ino is the inode of the file offset is in; 0 before the first read.
	ino    uint64
	offset int64
}

// segments returns the bytes added since the last read, one segment per file, oldest first.
// The last segment is the current file's: only the complete lines of it that the caller
// reports with consumed count as read.
func (a *auditLog) segments() ([][]byte, error) {
	cur, err := inode(a.path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	if a.ino != 0 && cur != a.ino {
		rotated, err := a.rotatedSince()
		if err != nil {
			return nil, err
		}
		for i, f := range rotated {
			from := int64(0)
			if i == 0 {
				from = a.offset
			}
			raw, err := readFrom(f, from)
			if err != nil {
				return nil, err
			}
			out = append(out, raw)
		}
		a.offset = 0
	}
	a.ino = cur
	raw, err := readFrom(a.path, a.offset)
	if err != nil {
		return nil, err
	}
	return append(out, raw), nil
}

// consumed records that n bytes of the current file's segment were read.
func (a *auditLog) consumed(n int) { a.offset += int64(n) }

// rotatedSince lists the renamed files from the one holding the last read on, oldest first.
func (a *auditLog) rotatedSince() ([]string, error) {
	ext := filepath.Ext(a.path)
	backups, err := filepath.Glob(strings.TrimSuffix(a.path, ext) + "-*" + ext)
	if err != nil {
		return nil, err
	}
	sort.Strings(backups) // lumberjack's timestamps sort by time
	for i, b := range backups {
		if ino, err := inode(b); err == nil && ino == a.ino {
			return backups[i:], nil
		}
	}
	return nil, fmt.Errorf("the audit log rotated and its earlier file is gone (%d backups)", len(backups))
}

func inode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, fmt.Errorf("%s: no inode", path)
	}
	return st.Ino, nil
}

func readFrom(path string, offset int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}
