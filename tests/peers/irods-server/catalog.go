package main

// The catalog: an iCAT-shaped schema (r_coll_main, r_data_main,
// r_user_main, r_objt_access, r_meta_main, ...) in SQLite by default or in
// PostgreSQL when -db is a postgres:// URL. Every piece of state lives here
// or in the vault, so a restart keeps every object.

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3"
)

type catalog struct {
	db       *sql.DB
	postgres bool
	zone     string
}

// Access levels, as iRODS 4.3 names them in r_tokn_main.
const (
	accessNull   = 1000
	accessReadMD = 1040
	accessRead   = 1050
	accessModify = 1120
	accessOwn    = 1200
)

var accessNames = map[int]string{
	1000: "null", 1010: "execute", 1020: "read_annotation", 1030: "read_system_metadata",
	1040: "read_metadata", 1050: "read_object", 1060: "write_annotation", 1070: "create_metadata",
	1080: "modify_metadata", 1090: "delete_metadata", 1100: "administer_object",
	1110: "create_object", 1120: "modify_object", 1130: "delete_object", 1140: "create_token",
	1150: "delete_token", 1160: "curate", 1200: "own",
}

// accessLevel maps every spelling clients send (4.2's "read object", 4.3's
// "read_object", the short "read"/"write") to a level.
func accessLevel(name string) (int, bool) {
	switch strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), " ", "_") {
	case "null", "":
		return accessNull, true
	case "read", "read_object":
		return accessRead, true
	case "write", "modify_object":
		return accessModify, true
	case "own":
		return accessOwn, true
	case "read_metadata":
		return accessReadMD, true
	}
	for id, n := range accessNames {
		if n == name {
			return id, true
		}
	}
	return 0, false
}

func openCatalog(url, zone string) (*catalog, error) {
	c := &catalog{zone: zone}
	var err error
	if strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://") {
		c.postgres = true
		c.db, err = sql.Open("pgx", url)
	} else {
		path := strings.TrimPrefix(url, "sqlite://")
		c.db, err = sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL&_busy_timeout=10000&_foreign_keys=on&_synchronous=NORMAL")
		// One connection: SQLite serializes writers anyway, and one
		// connection never sees SQLITE_BUSY.
		c.db.SetMaxOpenConns(1)
	}
	if err != nil {
		return nil, err
	}
	if err := c.db.Ping(); err != nil {
		return nil, fmt.Errorf("catalog %s: %v", url, err)
	}
	if err := c.createSchema(); err != nil {
		return nil, fmt.Errorf("catalog schema: %v", err)
	}
	return c, nil
}

func (c *catalog) rebind(q string) string {
	if !c.postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

type querier interface {
	Exec(string, ...any) (sql.Result, error)
	Query(string, ...any) (*sql.Rows, error)
	QueryRow(string, ...any) *sql.Row
}

// withTx runs fn in one catalog transaction: committed if fn returns nil,
// rolled back if it returns an error (which withTx returns).
func (c *catalog) withTx(fn func(tx *sql.Tx) error) error {
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

func (c *catalog) exec(q querier, query string, args ...any) error {
	_, err := q.Exec(c.rebind(query), args...)
	return err
}

func (c *catalog) row(q querier, query string, args ...any) *sql.Row {
	return q.QueryRow(c.rebind(query), args...)
}

// ids runs a query of one integer column and returns its values.
func (c *catalog) ids(q querier, query string, args ...any) ([]int64, error) {
	rows, err := q.Query(c.rebind(query), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		rows.Scan(&id)
		out = append(out, id)
	}
	return out, nil
}

func now() string { return fmt.Sprintf("%011d", time.Now().Unix()) }

func (c *catalog) createSchema() error {
	id := "INTEGER PRIMARY KEY"
	if c.postgres {
		id = "BIGSERIAL PRIMARY KEY"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS r_objectid (object_id ` + id + `, kind TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS r_zone_main (zone_id BIGINT PRIMARY KEY, zone_name TEXT UNIQUE NOT NULL,
			zone_type_name TEXT NOT NULL, zone_conn_string TEXT NOT NULL DEFAULT '', r_comment TEXT NOT NULL DEFAULT '',
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS r_user_main (user_id BIGINT PRIMARY KEY, user_name TEXT NOT NULL,
			user_type_name TEXT NOT NULL, zone_name TEXT NOT NULL, user_info TEXT NOT NULL DEFAULT '',
			r_comment TEXT NOT NULL DEFAULT '', create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL,
			UNIQUE (user_name, zone_name))`,
		`CREATE TABLE IF NOT EXISTS r_user_password (user_id BIGINT PRIMARY KEY, rcat_password TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS r_user_group (group_user_id BIGINT NOT NULL, user_id BIGINT NOT NULL,
			PRIMARY KEY (group_user_id, user_id))`,
		`CREATE TABLE IF NOT EXISTS r_resc_main (resc_id BIGINT PRIMARY KEY, resc_name TEXT UNIQUE NOT NULL,
			zone_name TEXT NOT NULL, resc_type_name TEXT NOT NULL, resc_class_name TEXT NOT NULL,
			resc_net TEXT NOT NULL, resc_def_path TEXT NOT NULL, resc_status TEXT NOT NULL DEFAULT '',
			resc_parent TEXT NOT NULL DEFAULT '', resc_context TEXT NOT NULL DEFAULT '',
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS r_coll_main (coll_id BIGINT PRIMARY KEY, parent_coll_name TEXT NOT NULL,
			coll_name TEXT UNIQUE NOT NULL, coll_owner_name TEXT NOT NULL, coll_owner_zone TEXT NOT NULL,
			coll_map_id BIGINT NOT NULL DEFAULT 0, coll_inheritance TEXT NOT NULL DEFAULT '',
			coll_type TEXT NOT NULL DEFAULT '', coll_info1 TEXT NOT NULL DEFAULT '',
			coll_info2 TEXT NOT NULL DEFAULT '', r_comment TEXT NOT NULL DEFAULT '',
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL)`,
		`CREATE INDEX IF NOT EXISTS idx_coll_parent ON r_coll_main (parent_coll_name)`,
		`CREATE TABLE IF NOT EXISTS r_data_main (data_id BIGINT NOT NULL, coll_id BIGINT NOT NULL,
			data_name TEXT NOT NULL, data_repl_num BIGINT NOT NULL DEFAULT 0, data_version TEXT NOT NULL DEFAULT '',
			data_type_name TEXT NOT NULL DEFAULT 'generic', data_size BIGINT NOT NULL DEFAULT 0,
			resc_id BIGINT NOT NULL, data_path TEXT NOT NULL, data_owner_name TEXT NOT NULL,
			data_owner_zone TEXT NOT NULL, data_is_dirty BIGINT NOT NULL DEFAULT 1,
			data_status TEXT NOT NULL DEFAULT '', data_checksum TEXT NOT NULL DEFAULT '',
			data_expiry_ts TEXT NOT NULL DEFAULT '', data_map_id BIGINT NOT NULL DEFAULT 0,
			data_mode TEXT NOT NULL DEFAULT '', r_comment TEXT NOT NULL DEFAULT '',
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL, access_ts TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (data_id, data_repl_num), UNIQUE (coll_id, data_name, data_repl_num))`,
		`CREATE TABLE IF NOT EXISTS r_objt_access (object_id BIGINT NOT NULL, user_id BIGINT NOT NULL,
			access_type_id BIGINT NOT NULL, create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL,
			PRIMARY KEY (object_id, user_id))`,
		`CREATE INDEX IF NOT EXISTS idx_objt_access_user ON r_objt_access (user_id)`,
		`CREATE TABLE IF NOT EXISTS r_tokn_main (token_namespace TEXT NOT NULL, token_id BIGINT NOT NULL,
			token_name TEXT NOT NULL, PRIMARY KEY (token_namespace, token_id))`,
		`CREATE TABLE IF NOT EXISTS r_meta_main (meta_id BIGINT PRIMARY KEY, meta_attr_name TEXT NOT NULL,
			meta_attr_value TEXT NOT NULL, meta_attr_unit TEXT NOT NULL DEFAULT '',
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL)`,
		`CREATE TABLE IF NOT EXISTS r_objt_metamap (object_id BIGINT NOT NULL, meta_id BIGINT NOT NULL,
			create_ts TEXT NOT NULL, modify_ts TEXT NOT NULL, PRIMARY KEY (object_id, meta_id))`,
		`CREATE INDEX IF NOT EXISTS idx_metamap_meta ON r_objt_metamap (meta_id)`,
	}
	for _, s := range stmts {
		if _, err := c.db.Exec(s); err != nil {
			return fmt.Errorf("%v in %.60s", err, s)
		}
	}
	return nil
}

func (c *catalog) newObjectID(q querier, kind string) (int64, error) {
	var id int64
	err := c.row(q, `INSERT INTO r_objectid (kind) VALUES (?) RETURNING object_id`, kind).Scan(&id)
	return id, err
}

// bootstrap creates the zone, the resource, the admin and the given users
// with their home collections, once; later starts find them in place.
func (c *catalog) bootstrap(vault string, users []bootUser) error {
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ts := now()
	var n int
	if err := c.row(tx, `SELECT COUNT(*) FROM r_zone_main`).Scan(&n); err != nil {
		return err
	}
	if n == 0 {
		zid, _ := c.newObjectID(tx, "zone")
		if err := c.exec(tx, `INSERT INTO r_zone_main VALUES (?, ?, 'local', '', '', ?, ?)`, zid, c.zone, ts, ts); err != nil {
			return err
		}
		rid, _ := c.newObjectID(tx, "resource")
		if err := c.exec(tx, `INSERT INTO r_resc_main VALUES (?, 'demoResc', ?, 'unixfilesystem', 'cache',
			'localhost', ?, 'up', '', '', ?, ?)`, rid, c.zone, vault, ts, ts); err != nil {
			return err
		}
		for id, name := range accessNames {
			if err := c.exec(tx, `INSERT INTO r_tokn_main VALUES ('access_type', ?, ?)`, id, name); err != nil {
				return err
			}
		}
		if _, err := c.addUser(tx, "public", "rodsgroup", ""); err != nil {
			return err
		}
	}
	for _, u := range users { // rods comes first: it owns the zone's roots
		if _, err := c.addUser(tx, u.name, u.kind, u.password); err != nil {
			return err
		}
	}
	for _, coll := range []string{"/", "/" + c.zone, "/" + c.zone + "/home", "/" + c.zone + "/trash",
		"/" + c.zone + "/trash/home"} {
		if _, err := c.insertColl(tx, coll, "rods", 0); err != nil {
			return err
		}
	}
	return tx.Commit()
}

type bootUser struct{ name, password, kind string }

// addUser creates a user (and its home collection) or, when it exists,
// sets its password: a restart with new -user flags takes effect.
func (c *catalog) addUser(q querier, name, kind, password string) (int64, error) {
	var id int64
	err := c.row(q, `SELECT user_id FROM r_user_main WHERE user_name = ? AND zone_name = ?`, name, c.zone).Scan(&id)
	if err == sql.ErrNoRows {
		ts := now()
		if id, err = c.newObjectID(q, "user"); err != nil {
			return 0, err
		}
		if err = c.exec(q, `INSERT INTO r_user_main VALUES (?, ?, ?, ?, '', '', ?, ?)`, id, name, kind, c.zone, ts, ts); err != nil {
			return 0, err
		}
		if kind != "rodsgroup" {
			if err = c.exec(q, `INSERT INTO r_user_group VALUES (?, ?)`, id, id); err != nil {
				return 0, err
			}
			var public int64
			if c.row(q, `SELECT user_id FROM r_user_main WHERE user_name = 'public'`).Scan(&public) == nil {
				c.exec(q, `INSERT INTO r_user_group VALUES (?, ?)`, public, id)
			}
			home := "/" + c.zone + "/home/" + name
			if _, err := c.insertColl(q, home, name, 0); err != nil {
				return 0, err
			}
		}
	} else if err != nil {
		return 0, err
	}
	if password != "" {
		if err := c.exec(q, `DELETE FROM r_user_password WHERE user_id = ?`, id); err != nil {
			return 0, err
		}
		if err := c.exec(q, `INSERT INTO r_user_password VALUES (?, ?)`, id, password); err != nil {
			return 0, err
		}
	}
	return id, nil
}

type user struct {
	id       int64
	name     string
	kind     string
	password string
}

func (c *catalog) lookupUser(name, zone string) (*user, error) {
	u := &user{name: name}
	var pw sql.NullString
	err := c.row(c.db, `SELECT u.user_id, u.user_type_name, p.rcat_password FROM r_user_main u
		LEFT JOIN r_user_password p ON p.user_id = u.user_id WHERE u.user_name = ? AND u.zone_name = ?`,
		name, zone).Scan(&u.id, &u.kind, &pw)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	u.password = pw.String
	return u, err
}

// insertColl adds a collection owned by owner (who gets "own" on it).
func (c *catalog) insertColl(q querier, path, owner string, inheritFrom int64) (int64, error) {
	var exists int64
	if c.row(q, `SELECT coll_id FROM r_coll_main WHERE coll_name = ?`, path).Scan(&exists) == nil {
		return exists, nil
	}
	id, err := c.newObjectID(q, "collection")
	if err != nil {
		return 0, err
	}
	ts := now()
	parent := parentPath(path)
	if path == "/" {
		parent = "/"
	}
	if err := c.exec(q, `INSERT INTO r_coll_main (coll_id, parent_coll_name, coll_name, coll_owner_name,
		coll_owner_zone, create_ts, modify_ts) VALUES (?, ?, ?, ?, ?, ?, ?)`, id, parent, path, owner, c.zone, ts, ts); err != nil {
		return 0, err
	}
	return id, c.grantOwner(q, id, owner, inheritFrom)
}

// grantOwner gives the owner "own" and, when the parent collection has
// inheritance set, copies the parent's other grants.
func (c *catalog) grantOwner(q querier, objectID int64, owner string, inheritFrom int64) error {
	ts := now()
	if inheritFrom != 0 {
		if err := c.exec(q, `INSERT INTO r_objt_access SELECT ?, user_id, access_type_id, ?, ?
			FROM r_objt_access WHERE object_id = ?`, objectID, ts, ts, inheritFrom); err != nil {
			return err
		}
	}
	return c.setAccess(q, objectID, owner, accessOwn)
}

// setAccess sets one user's level on an object; accessNull removes it.
func (c *catalog) setAccess(q querier, objectID int64, userName string, level int) error {
	var uid int64
	if err := c.row(q, `SELECT user_id FROM r_user_main WHERE user_name = ? AND zone_name = ?`,
		userName, c.zone).Scan(&uid); err != nil {
		return errUnknownUser
	}
	if err := c.exec(q, `DELETE FROM r_objt_access WHERE object_id = ? AND user_id = ?`, objectID, uid); err != nil {
		return err
	}
	if level == accessNull {
		return nil
	}
	ts := now()
	return c.exec(q, `INSERT INTO r_objt_access VALUES (?, ?, ?, ?, ?)`, objectID, uid, level, ts, ts)
}

// accessOf is the highest level the user holds on the object, directly or
// through a group (every user is in its own group and in public).
func (c *catalog) accessOf(q querier, objectID, userID int64) (int, error) {
	var level sql.NullInt64
	err := c.row(q, `SELECT MAX(a.access_type_id) FROM r_objt_access a
		JOIN r_user_group g ON g.group_user_id = a.user_id WHERE a.object_id = ? AND g.user_id = ?`,
		objectID, userID).Scan(&level)
	return int(level.Int64), err
}

func parentPath(p string) string {
	i := strings.LastIndex(p, "/")
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

func baseName(p string) string { return p[strings.LastIndex(p, "/")+1:] }
