package sqlite

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// walVFS is SQLite's unix VFS with the writes to a WAL file gathered. SQLite
// writes a WAL frame in two calls (its 24-byte header, then its page), so
// a commit of 300 pages made 600 pwrite calls (now 12): 5% of the CPU
// under OpenTelemetry load, each call's fixed cost rather than its bytes.
//
// The writes are kept in order in a buffer and written out before
// anything could see them, so the file holds, at every point another
// connection or a restart can observe, what SQLite wrote in the order it
// wrote it:
//   - before a commit frame (a frame header with a database size), which
//     goes out as it comes with its page: a commit is visible to readers
//     once SQLite puts its commit frame in the WAL's index, after writing
//     the frame;
//   - before a sync (every commit, at synchronous=FULL), a read, a
//     truncation, the file's size, a file control, or the file's close;
//   - before a write anywhere but at the buffer's end, and when the
//     buffer is full.
//
// A process that dies with writes in the buffer loses only frames of a
// commit not yet made, which a restart ignores as it ignores a torn
// write. An error writing the buffer out is returned by the call that
// wrote it out (the commit frame's write, at the latest), so SQLite rolls
// the transaction back as it does after a failed write. A WAL file whose
// methods are not the ones wrapped first is written as it is.
const walVFSName = "lookout-wal"

// walBufSize is the size of a WAL file's buffer (one a writing
// connection): under 128 KiB, since the unix VFS writes at most 128 KiB
// less a byte a call (and reports a longer write as a full disk).
const walBufSize = 124 << 10

// walFrameHeader is the size of a WAL frame's header.
const walFrameHeader = 24

// walState is kept after the unix VFS's own file struct, in the memory
// SQLite allocates for each file (szOsFile): no Go pointers, no lookup.
type walState struct {
	buf      uintptr // walBufSize bytes of C memory, 0 until the first write
	start    int64   // the file offset of buf[0]
	n        int64   // bytes held
	commitAt int64   // the offset of the page of the commit frame written last, or -1
}

var (
	walVFSOnce sync.Once
	walVFSErr  error

	unixVFS    uintptr // SQLite's unix VFS
	unixOpen   uintptr // its xOpen
	unixSize   int32   // its szOsFile: where a file's walState begins
	ourVFS     sqlite3.Tsqlite3_vfs
	walMethods sqlite3.Tsqlite3_io_methods // a WAL file's: unix's, with writes gathered
	unixWAL    sqlite3.Tsqlite3_io_methods // unix's own, as a WAL file had them
	methodsMu  sync.Mutex
	methodsSet uintptr // the unix methods walMethods wraps, once set
)

// registerWALVFS registers walVFS with SQLite, once.
func registerWALVFS() error {
	walVFSOnce.Do(func() {
		tls := libc.NewTLS()
		defer tls.Close()
		name, err := libc.CString("unix")
		if err != nil {
			walVFSErr = err
			return
		}
		defer libc.Xfree(tls, name)
		unixVFS = sqlite3.Xsqlite3_vfs_find(tls, name)
		if unixVFS == 0 {
			walVFSErr = fmt.Errorf("sqlite: no unix VFS to wrap")
			return
		}
		u := (*sqlite3.Tsqlite3_vfs)(ptr(unixVFS))
		ourVFS = *u
		unixOpen, unixSize = u.FxOpen, u.FszOsFile
		ourVFS.FszOsFile = unixSize + int32(unsafe.Sizeof(walState{}))
		ourVFS.FpNext = 0
		// Never freed: SQLite keeps the name as long as the VFS.
		if ourVFS.FzName, err = libc.CString(walVFSName); err != nil {
			walVFSErr = err
			return
		}
		*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_filename, uintptr, int32, uintptr) int32)(unsafe.Pointer(&ourVFS.FxOpen)) = walOpen
		if rc := sqlite3.Xsqlite3_vfs_register(tls, uintptr(unsafe.Pointer(&ourVFS)), 0); rc != sqlite3.SQLITE_OK {
			walVFSErr = fmt.Errorf("sqlite: registering the %s VFS: code %d", walVFSName, rc)
		}
	})
	return walVFSErr
}

// ptr is the C memory at p (SQLite's, not Go's heap).
func ptr(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

func stateOf(pFile uintptr) *walState {
	return (*walState)(ptr(pFile + uintptr(unixSize)))
}

func walOpen(tls *libc.TLS, _ uintptr, zName sqlite3.Tsqlite3_filename, pFile uintptr, flags int32, pOutFlags uintptr) int32 {
	*stateOf(pFile) = walState{commitAt: -1}
	// The unix VFS's own, which keeps its VFS in the file.
	rc := (*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_filename, uintptr, int32, uintptr) int32)(unsafe.Pointer(&unixOpen)))(tls, unixVFS, zName, pFile, flags, pOutFlags)
	f := (*sqlite3.Tsqlite3_file)(ptr(pFile))
	if rc != sqlite3.SQLITE_OK || flags&sqlite3.SQLITE_OPEN_WAL == 0 || f.FpMethods == 0 {
		return rc
	}
	if !setWALMethods(f.FpMethods) {
		return rc // methods other than those wrapped: written as they are
	}
	f.FpMethods = uintptr(unsafe.Pointer(&walMethods))
	return rc
}

// setWALMethods makes walMethods wrap the unix methods m, the first time;
// it reports whether walMethods wraps m.
func setWALMethods(m uintptr) bool {
	methodsMu.Lock()
	defer methodsMu.Unlock()
	if methodsSet != 0 {
		return methodsSet == m
	}
	unixWAL = *(*sqlite3.Tsqlite3_io_methods)(ptr(m))
	walMethods = unixWAL
	*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&walMethods.FxClose)) = walClose
	*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&walMethods.FxRead)) = walRead
	*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&walMethods.FxWrite)) = walWrite
	*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&walMethods.FxTruncate)) = walTruncate
	*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&walMethods.FxSync)) = walSync
	*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&walMethods.FxFileSize)) = walFileSize
	*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&walMethods.FxFileControl)) = walFileControl
	methodsSet = m
	return true
}

// write is the unix VFS's write of a WAL file.
func write(tls *libc.TLS, pFile, p uintptr, n int32, off int64) int32 {
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&unixWAL.FxWrite)))(tls, pFile, p, n, off)
}

// writeOut writes a buffer out: write, but a variable for a test to make
// it fail.
var writeOut = write

// flush writes the buffer out. The buffer is emptied whatever the
// outcome: after an error SQLite rolls back, and the frames were never
// part of a commit.
func flush(tls *libc.TLS, pFile uintptr) int32 {
	s := stateOf(pFile)
	if s.n == 0 {
		return sqlite3.SQLITE_OK
	}
	rc := writeOut(tls, pFile, s.buf, int32(s.n), s.start)
	s.n, s.commitAt = 0, -1
	return rc
}

func walWrite(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	s := stateOf(pFile)
	// A commit frame's header and page go out as they come, after what is
	// held: readers see the commit once its header and page are in the
	// file, and SQLite may write the header again by itself (rewriting
	// checksums) with nothing after it to flush it.
	commitHeader := iAmt == walFrameHeader && binary.BigEndian.Uint32(unsafe.Slice((*byte)(ptr(zBuf)), walFrameHeader)[4:8]) != 0
	if s.n > 0 && (commitHeader || iOfst != s.start+s.n || s.n+int64(iAmt) > walBufSize) {
		if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
			return rc
		}
	}
	if commitHeader {
		rc := write(tls, pFile, zBuf, iAmt, iOfst)
		if rc == sqlite3.SQLITE_OK {
			s.commitAt = iOfst + walFrameHeader
		}
		return rc
	}
	if s.commitAt == iOfst || int64(iAmt) > walBufSize {
		s.commitAt = -1
		return write(tls, pFile, zBuf, iAmt, iOfst)
	}
	if s.buf == 0 {
		if s.buf = libc.Xmalloc(tls, walBufSize); s.buf == 0 {
			return write(tls, pFile, zBuf, iAmt, iOfst)
		}
	}
	if s.n == 0 {
		s.start = iOfst
	}
	copy(unsafe.Slice((*byte)(ptr(s.buf+uintptr(s.n))), iAmt), unsafe.Slice((*byte)(ptr(zBuf)), iAmt))
	s.n += int64(iAmt)
	return sqlite3.SQLITE_OK
}

func walRead(tls *libc.TLS, pFile, zBuf uintptr, iAmt int32, iOfst sqlite3.Tsqlite3_int64) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr, int32, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&unixWAL.FxRead)))(tls, pFile, zBuf, iAmt, iOfst)
}

func walTruncate(tls *libc.TLS, pFile uintptr, size sqlite3.Tsqlite3_int64) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, sqlite3.Tsqlite3_int64) int32)(unsafe.Pointer(&unixWAL.FxTruncate)))(tls, pFile, size)
}

func walSync(tls *libc.TLS, pFile uintptr, flags int32) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&unixWAL.FxSync)))(tls, pFile, flags)
}

func walFileSize(tls *libc.TLS, pFile, pSize uintptr) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&unixWAL.FxFileSize)))(tls, pFile, pSize)
}

func walFileControl(tls *libc.TLS, pFile uintptr, op int32, pArg uintptr) int32 {
	if rc := flush(tls, pFile); rc != sqlite3.SQLITE_OK {
		return rc
	}
	return (*(*func(*libc.TLS, uintptr, int32, uintptr) int32)(unsafe.Pointer(&unixWAL.FxFileControl)))(tls, pFile, op, pArg)
}

func walClose(tls *libc.TLS, pFile uintptr) int32 {
	rc := flush(tls, pFile)
	s := stateOf(pFile)
	if s.buf != 0 {
		libc.Xfree(tls, s.buf)
		s.buf = 0
	}
	if crc := (*(*func(*libc.TLS, uintptr) int32)(unsafe.Pointer(&unixWAL.FxClose)))(tls, pFile); rc == sqlite3.SQLITE_OK {
		rc = crc
	}
	return rc
}
