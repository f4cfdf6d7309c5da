package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walDSN is a database at path in WAL mode, synchronous=FULL as the store's
// writers are, through walVFS when gathered.
func walDSN(t *testing.T, path string, gathered bool) string {
	return walSyncDSN(t, path, gathered, "FULL")
}

func walSyncDSN(t *testing.T, path string, gathered bool, synchronous string) string {
	t.Helper()
	if err := registerWALVFS(); err != nil {
		t.Fatal(err)
	}
	dsn := path + "?_journal_mode=WAL&_synchronous=" + synchronous + "&_pragma=wal_autocheckpoint(0)"
	if gathered {
		dsn += "&vfs=" + walVFSName
	}
	return dsn
}

// writeCalls is the process's write system calls so far (/proc/self/io).
func writeCalls(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "syscw: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no syscw in /proc/self/io")
	return 0
}

// bigCommit inserts rows of 4 KiB (blob i filled with byte i) in one
// transaction, then a second small one, and returns the write calls they
// took.
func bigCommit(t *testing.T, db *sql.DB, rows int) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)`); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx) // the calls of one connection's commits only
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	before := writeCalls(t)
	tx, err := c.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 4096)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (?, ?)`, rows, []byte("last")); err != nil {
		t.Fatal(err)
	}
	return writeCalls(t) - before
}

// checkBlobs reads the rows bigCommit wrote through a connection of the
// plain unix VFS, and checks the file.
func checkBlobs(t *testing.T, path string, rows int) {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Query(`SELECT id, b FROM blobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	n := checkRows(t, rs, func(id int) []byte {
		if id < rows {
			return bytes.Repeat([]byte{byte(id)}, 4096)
		}
		return []byte("last")
	})
	if n != rows+1 {
		t.Errorf("a plain connection reads %d rows, want %d", n, rows+1)
	}
	var ok string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

// checkRows checks rows of id and blob b against want(id), ids from 0 in
// order, and returns their count.
func checkRows(t *testing.T, rs *sql.Rows, want func(id int) []byte) int {
	t.Helper()
	defer rs.Close()
	n := 0
	for rs.Next() {
		var id int
		var b []byte
		if err := rs.Scan(&id, &b); err != nil {
			t.Fatal(err)
		}
		if id != n || !bytes.Equal(b, want(id)) {
			t.Fatalf("row %d: id %d, %d bytes, not as written", n, id, len(b))
		}
		n++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWALWritesGathered: a commit through walVFS takes a write call for
// about 30 pages, not two a page, and what it wrote is read back whole
// by a connection of the plain VFS.
func TestWALWritesGathered(t *testing.T) {
	const rows = 600 // a 4 KiB page each, and their overflow
	for _, synchronous := range []string{"FULL", "NORMAL"} {
		t.Run(synchronous, func(t *testing.T) {
			calls := map[bool]int64{}
			for _, gathered := range []bool{false, true} {
				path := filepath.Join(t.TempDir(), "wal.db")
				db, err := sql.Open("sqlite", walSyncDSN(t, path, gathered, synchronous))
				if err != nil {
					t.Fatal(err)
				}
				calls[gathered] = bigCommit(t, db, rows)
				// Read while the writer is open: what it committed is in
				// the file, not in its buffer (at NORMAL, no sync writes
				// it out).
				checkBlobs(t, path, rows)
				if err := db.Close(); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("write calls for %d rows: %d plain, %d gathered", rows, calls[false], calls[true])
			if calls[false] < 2*rows {
				t.Fatalf("the plain VFS took %d write calls for %d pages: the count does not measure what it should", calls[false], rows)
			}
			if calls[true] > calls[false]/10 {
				t.Errorf("walVFS took %d write calls, the plain VFS %d: want a tenth at most", calls[true], calls[false])
			}
		})
	}
}

// TestWALWriteErrorFailsCommit: when the gathered writes cannot be written
// (here the process's file size limit, as a full disk), the commit fails,
// and the file keeps every commit before it and nothing of the failed one.
func TestWALWriteErrorFailsCommit(t *testing.T) {
	if path := os.Getenv("LOOKOUT_WALVFS_CHILD"); path != "" {
		walWriteErrorChild(t, path)
		return
	}
	path := filepath.Join(t.TempDir(), "wal.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWALWriteErrorFailsCommit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LOOKOUT_WALVFS_CHILD="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child: %s", bytes.TrimSpace(out))
	if !strings.Contains(string(out), "big commit failed:") {
		t.Fatalf("the commit over the file size limit did not fail:\n%s", out)
	}
	checkBlobs(t, path, 0) // the small commit only, whole
}

func walWriteErrorChild(t *testing.T, path string) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", walDSN(t, path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range []string{`CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)`, `INSERT INTO blobs (id, b) VALUES (0, 'last')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	// A write past the limit fails with EFBIG, not a signal.
	signal.Ignore(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 600; i++ {
		if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i)}, 4096)); err != nil {
			fmt.Println("big commit failed:", err)
			tx.Rollback()
			return
		}
	}
	if err := tx.Commit(); err != nil {
		fmt.Println("big commit failed:", err)
		return
	}
	fmt.Println("big commit succeeded")
}

// TestWALFlushErrorFailsCommit: an error writing out the gathered writes
// fails the commit (and not only a later write), and the file stays whole.
func TestWALFlushErrorFailsCommit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := sql.Open("sqlite", walDSN(t, path, true))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	for _, q := range []string{`CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)`, `INSERT INTO blobs (id, b) VALUES (0, 'last')`} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	failed := 0
	writeOut = func(*libc.TLS, uintptr, uintptr, int32, int64) int32 {
		failed++
		return sqlite3.SQLITE_IOERR_WRITE
	}
	// Pages all written before the commit frame, so that only a gathered
	// write can fail.
	_, err = db.ExecContext(ctx, `WITH RECURSIVE s(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM s WHERE v < 20) INSERT INTO blobs (id, b) SELECT v + 1, randomblob(4096) FROM s`)
	writeOut = write
	if err == nil || failed == 0 {
		t.Fatalf("a commit whose gathered writes failed (%d) returned %v", failed, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (1, 'after')`); err != nil {
		t.Fatalf("the commit after the failed one: %v", err)
	}
	var n int
	var ok string
	if err := db.QueryRow(`SELECT count(*) FROM blobs`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d rows (%v), want the two commits around the failed one", n, err)
	}
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

// TestWALSpills: a transaction larger than the page cache spills pages to
// the WAL before its commit, reads them back and writes them again in
// place; through walVFS it reads what it wrote, and so does a plain
// connection after the commit.
func TestWALSpills(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := sql.Open("sqlite", walDSN(t, path, true)+"&_pragma=cache_size(10)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)`); err != nil {
		t.Fatal(err)
	}
	const rows = 300
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range rows {
			if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO blobs (id, b) VALUES (?, ?)`, i, bytes.Repeat([]byte{byte(i + round)}, 4096)); err != nil {
				t.Fatal(err)
			}
		}
		rs, err := tx.QueryContext(ctx, `SELECT id, b FROM blobs ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		if n := checkRows(t, rs, func(id int) []byte { return bytes.Repeat([]byte{byte(id + round)}, 4096) }); n != rows {
			t.Fatalf("round %d: the transaction reads %d rows, want %d", round, n, rows)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (?, 'last')`, rows); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// The last round wrote byte i+2: read it back as checkBlobs expects.
	if _, err := db.ExecContext(ctx, `UPDATE blobs SET b = zeroblob(4096) WHERE id < ?`, rows); err != nil {
		t.Fatal(err)
	}
	plain, err := sql.Open("sqlite", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var n int
	if err := plain.QueryRow(`SELECT count(*) FROM blobs WHERE b = zeroblob(4096)`).Scan(&n); err != nil || n != rows {
		t.Errorf("a plain connection reads %d rows as written (%v), want %d", n, err, rows)
	}
	var ok string
	if err := plain.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}

// TestWALRestarts: checkpoints let SQLite write the WAL again from its
// start (its header, then frames over the old ones); every commit is read
// back by a plain connection while the writer is open.
func TestWALRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := sql.Open("sqlite", strings.Replace(walDSN(t, path, true), "wal_autocheckpoint(0)", "wal_autocheckpoint(20)", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	plain, err := sql.Open("sqlite", path+"?_query_only=1")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, `CREATE TABLE blobs (id INTEGER PRIMARY KEY, b BLOB)`); err != nil {
		t.Fatal(err)
	}
	restarts := 0
	for c := range 60 {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			id := c*10 + i
			if _, err := tx.ExecContext(ctx, `INSERT INTO blobs (id, b) VALUES (?, ?)`, id, bytes.Repeat([]byte{byte(id)}, 4096)); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var n, sum int
		if err := plain.QueryRow(`SELECT count(*), coalesce(sum(length(b)), 0) FROM blobs`).Scan(&n, &sum); err != nil || n != (c+1)*10 || sum != n*4096 {
			t.Fatalf("after commit %d a plain connection reads %d rows of %d bytes (%v)", c, n, sum, err)
		}
		var busy, log, done int
		if err := db.QueryRow(`PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
			t.Fatal(err)
		}
		if log < 30 {
			restarts++
		}
	}
	if restarts == 0 {
		t.Fatal("the WAL never started again from its beginning")
	}
	var ok string
	if err := plain.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Errorf("integrity_check: %q, %v", ok, err)
	}
}
