package sqlite

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"

	"modernc.org/sqlite"
)

// The writers (the traces' and the index's) run the same few statements
// over and over: a gateway call's recording runs a handful per call, an
// index step the same ones per batch. database/sql's ExecContext on a
// connection prepares its statement anew each time (SQLite parsing the SQL
// was a tenth of a gateway recording's CPU), so a writer's connections keep
// the statements they executed, prepared, by their text. Only statements
// that return no rows are kept: a kept statement is never in use when it
// is run again, since a connection runs one thing at a time.

// stmtCacheSize bounds the statements a connection keeps (the least
// recently run go); statements built for a number of rows differ by text.
const stmtCacheSize = 128

// cachingConnector opens writer connections that keep their statements.
type cachingConnector struct {
	d   *sqlite.Driver
	dsn string
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn)
}

func (c cachingConnector) Driver() driver.Driver { return c.d }

// sqliteConn is what the driver's connections offer and the wrapper passes
// on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachingConn struct {
	sqliteConn
	byText map[string]*list.Element // of *cachedStmt
	lru    list.List
}

type cachedStmt struct {
	text string
	stmt driver.StmtExecContext
	st   driver.Stmt
}

func newCachingConn(c driver.Conn) (driver.Conn, error) {
	sc, ok := c.(sqliteConn)
	if !ok {
		c.Close()
		return nil, errors.New("sqlite: the driver's connection lacks an interface the statement cache needs")
	}
	return &cachingConn{sqliteConn: sc, byText: map[string]*list.Element{}}, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if el := c.byText[query]; el != nil {
		c.lru.MoveToFront(el)
		return el.Value.(*cachedStmt).stmt.ExecContext(ctx, args)
	}
	st, err := c.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	se, ok := st.(driver.StmtExecContext)
	if !ok {
		st.Close()
		return c.sqliteConn.ExecContext(ctx, query, args)
	}
	c.byText[query] = c.lru.PushFront(&cachedStmt{text: query, stmt: se, st: st})
	for c.lru.Len() > stmtCacheSize {
		old := c.lru.Remove(c.lru.Back()).(*cachedStmt)
		delete(c.byText, old.text)
		old.st.Close()
	}
	return se.ExecContext(ctx, args)
}

func (c *cachingConn) Close() error {
	var errs []error
	for el := c.lru.Front(); el != nil; el = el.Next() {
		errs = append(errs, el.Value.(*cachedStmt).st.Close())
	}
	c.byText, c.lru = nil, list.List{}
	errs = append(errs, c.sqliteConn.Close())
	return errors.Join(errs...)
}
