package main

// Collections, metadata, permissions and the little administration tests
// need.

import (
	"database/sql"
	"os"
	"strings"
)

// collInp reads a CollInpNew_PI: the collection's path (checked) and
// whether the operation is recursive.
func (s *session) collInp(body *node) (path string, recursive bool, err error) {
	path = body.Str("collName")
	_, recursive = body.KeyVals()["recursiveOpr"]
	return path, recursive, s.checkPath(path)
}

func collCreate(s *session, _ *message, body *node) (reply, error) {
	path, recursive, err := s.collInp(body)
	if err != nil {
		return reply{}, err
	}
	cat := s.srv.cat
	return reply{}, cat.withTx(func(tx *sql.Tx) error {
		if c, err := cat.lookupColl(tx, path); err != nil {
			return err
		} else if c != nil {
			if recursive {
				return nil
			}
			return fail(CATALOG_ALREADY_HAS_ITEM_BY_THAT_NAME, "collection %s exists", path)
		}
		// Walk down from the deepest existing ancestor.
		var missing []string
		p := path
		var parent *collRow
		var err error
		for {
			if d, _ := cat.lookupData(tx, p); d != nil {
				return fail(CAT_NAME_EXISTS_AS_DATAOBJ, "%s is a data object", p)
			}
			missing = append(missing, p)
			if parent, err = cat.lookupColl(tx, parentPath(p)); err != nil {
				return err
			}
			if parent != nil {
				break
			}
			if !recursive {
				return fail(CAT_UNKNOWN_COLLECTION, "parent collection %s does not exist", parentPath(p))
			}
			p = parentPath(p)
		}
		if err := s.requireAccess(tx, parent.id, accessModify, parent.name); err != nil {
			return err
		}
		for i := len(missing) - 1; i >= 0; i-- {
			inherit := int64(0)
			if parent.inheritance == "1" {
				inherit = parent.id
			}
			id, err := cat.insertColl(tx, missing[i], s.user.name, inherit)
			if err != nil {
				return err
			}
			if inherit != 0 {
				cat.exec(tx, `UPDATE r_coll_main SET coll_inheritance = '1' WHERE coll_id = ?`, id)
			}
			parent = &collRow{id: id, name: missing[i], inheritance: parent.inheritance}
		}
		return nil
	})
}

func rmColl(s *session, _ *message, body *node) (reply, error) {
	path, recursive, err := s.collInp(body)
	if err != nil {
		return reply{}, err
	}
	cat := s.srv.cat
	var files []string
	err = cat.withTx(func(tx *sql.Tx) error {
		c, err := cat.existingColl(tx, path)
		if err != nil {
			return err
		}
		if strings.Count(path, "/") <= 2 {
			return fail(CAT_INSUFFICIENT_PRIVILEGE, "%s is a zone or home root", path)
		}
		if err := s.requireAccess(tx, c.id, accessOwn, path); err != nil {
			return err
		}
		collIDs := []int64{c.id}
		if recursive {
			below, err := cat.ids(tx, `SELECT coll_id FROM r_coll_main WHERE coll_name LIKE ? ESCAPE '\'`, likePrefix(path+"/"))
			if err != nil {
				return err
			}
			collIDs = append(collIDs, below...)
		} else {
			var n int
			cat.row(tx, `SELECT (SELECT COUNT(*) FROM r_coll_main WHERE parent_coll_name = ?) +
				(SELECT COUNT(*) FROM r_data_main WHERE coll_id = ?)`, path, c.id).Scan(&n)
			if n > 0 {
				return fail(CAT_COLLECTION_NOT_EMPTY, "collection %s is not empty", path)
			}
		}
		var dataIDs []int64
		for _, cid := range collIDs {
			rows, err := tx.Query(cat.rebind(`SELECT data_id, data_path FROM r_data_main WHERE coll_id = ?`), cid)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id int64
				var p string
				rows.Scan(&id, &p)
				dataIDs = append(dataIDs, id)
				files = append(files, p)
			}
			rows.Close()
		}
		for _, id := range dataIDs {
			if err := s.requireAccess(tx, id, accessOwn, path); err != nil {
				return err
			}
		}
		if err := cat.deleteObjects(tx, dataIDs); err != nil {
			return err
		}
		for _, cid := range collIDs {
			for _, stmt := range []string{`DELETE FROM r_coll_main WHERE coll_id = ?`,
				`DELETE FROM r_objt_access WHERE object_id = ?`, `DELETE FROM r_objt_metamap WHERE object_id = ?`} {
				if err := cat.exec(tx, stmt, cid); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return reply{}, err
	}
	for i, f := range files {
		os.Remove(f)
		// A long removal reports progress the way the server does, every
		// 100 objects, and waits for the client's acknowledgement.
		if (i+1)%100 == 0 {
			if err := s.collStatExchange(i+1, path); err != nil {
				return reply{}, err
			}
		}
	}
	return reply{msg: pack("CollOprStat_PI", func(b *builder) {
		b.int("filesCnt", int64(len(files)))
		b.int("totalFileCnt", int64(len(files)))
		b.int("bytesWritten", 0)
		b.str("lastObjPath", path)
	})}, nil
}

// objectOf resolves "-d"/"-C" style targets to an object id.
func (s *session) objectOf(q querier, kind, name string) (int64, error) {
	cat := s.srv.cat
	switch kind {
	case "-d":
		d, err := cat.existingData(q, name)
		if err != nil {
			return 0, err
		}
		return d.id, nil
	case "-C", "-c":
		c, err := cat.existingColl(q, name)
		if err != nil {
			return 0, err
		}
		return c.id, nil
	case "-u":
		u, err := cat.lookupUser(name, s.srv.zone)
		if err != nil {
			return 0, err
		}
		if u == nil {
			return 0, fail(CAT_INVALID_USER, "unknown user %s", name)
		}
		return u.id, nil
	case "-R", "-r":
		var id int64
		if cat.row(q, `SELECT resc_id FROM r_resc_main WHERE resc_name = ?`, name).Scan(&id) != nil {
			return 0, fail(CAT_INVALID_ARGUMENT, "unknown resource %s", name)
		}
		return id, nil
	}
	return 0, fail(CAT_INVALID_ARGUMENT, "unknown target type %q", kind)
}

func modAVU(s *session, _ *message, body *node) (reply, error) {
	op, kind, name := body.Str("arg0"), body.Str("arg1"), body.Str("arg2")
	attr, value, unit := body.Str("arg3"), body.Str("arg4"), body.Str("arg5")
	cat := s.srv.cat
	return reply{}, cat.withTx(func(tx *sql.Tx) error {
		obj, err := s.objectOf(tx, kind, name)
		if err != nil {
			return err
		}
		if kind == "-d" || kind == "-C" || kind == "-c" {
			if err := s.requireAccess(tx, obj, accessModify, name); err != nil {
				return err
			}
		} else if s.user.kind != "rodsadmin" {
			return fail(CAT_INSUFFICIENT_PRIVILEGE, "only an admin sets %s metadata", kind)
		}
		if attr == "" {
			return fail(CAT_INVALID_ARGUMENT, "empty attribute name")
		}
		ts := now()
		add := func() error {
			var metaID int64
			err := cat.row(tx, `SELECT meta_id FROM r_meta_main WHERE meta_attr_name = ? AND meta_attr_value = ?
				AND meta_attr_unit = ?`, attr, value, unit).Scan(&metaID)
			if err != nil {
				if metaID, err = cat.newObjectID(tx, "meta"); err != nil {
					return err
				}
				if err := cat.exec(tx, `INSERT INTO r_meta_main VALUES (?, ?, ?, ?, ?, ?)`, metaID, attr, value, unit, ts, ts); err != nil {
					return err
				}
			}
			var n int
			cat.row(tx, `SELECT COUNT(*) FROM r_objt_metamap WHERE object_id = ? AND meta_id = ?`, obj, metaID).Scan(&n)
			if n > 0 {
				return fail(CATALOG_ALREADY_HAS_ITEM_BY_THAT_NAME, "AVU %s=%s is already on %s", attr, value, name)
			}
			return cat.exec(tx, `INSERT INTO r_objt_metamap VALUES (?, ?, ?, ?)`, obj, metaID, ts, ts)
		}
		remove := func(pattern bool) error {
			cmp := "="
			if pattern {
				cmp = "LIKE"
			}
			q := `DELETE FROM r_objt_metamap WHERE object_id = ? AND meta_id IN (SELECT meta_id FROM r_meta_main
				WHERE meta_attr_name ` + cmp + ` ? AND meta_attr_value ` + cmp + ` ?`
			args := []any{obj, attr, value}
			if unit != "" {
				q += ` AND meta_attr_unit ` + cmp + ` ?`
				args = append(args, unit)
			}
			return cat.exec(tx, q+`)`, args...)
		}
		switch op {
		case "add", "adda":
			err = add()
		case "rm":
			err = remove(false)
		case "rmw":
			err = remove(true)
		case "set":
			if err = cat.exec(tx, `DELETE FROM r_objt_metamap WHERE object_id = ? AND meta_id IN
				(SELECT meta_id FROM r_meta_main WHERE meta_attr_name = ?)`, obj, attr); err == nil {
				err = add()
			}
		default:
			err = fail(CAT_INVALID_ARGUMENT, "metadata operation %q is not served", op)
		}
		if err != nil {
			return err
		}
		return nil
	})
}

func modAccessControl(s *session, _ *message, body *node) (reply, error) {
	level := body.Str("accessLevel")
	userName, path := body.Str("userName"), body.Str("path")
	recursive := body.Int("recursiveFlag") != 0
	level = strings.TrimPrefix(level, "admin:")
	if err := s.checkPath(path); err != nil {
		return reply{}, err
	}
	cat := s.srv.cat
	return reply{}, cat.withTx(func(tx *sql.Tx) error {
		var targets []int64
		coll, err := cat.lookupColl(tx, path)
		if err != nil {
			return err
		}
		if level == "inherit" || level == "noinherit" {
			if coll == nil {
				return fail(CAT_UNKNOWN_COLLECTION, "collection %s does not exist", path)
			}
			if err := s.requireAccess(tx, coll.id, accessOwn, path); err != nil {
				return err
			}
			flag := map[string]string{"inherit": "1", "noinherit": "0"}[level]
			cond := `coll_id = ?`
			args := []any{flag, coll.id}
			if recursive {
				cond += ` OR coll_name LIKE ? ESCAPE '\'`
				args = append(args, likePrefix(path+"/"))
			}
			if err := cat.exec(tx, `UPDATE r_coll_main SET coll_inheritance = ? WHERE `+cond, args...); err != nil {
				return err
			}
			return nil
		}
		lvl, ok := accessLevel(level)
		if !ok {
			return fail(CAT_INVALID_ARGUMENT, "unknown access level %q", level)
		}
		if coll != nil {
			targets = append(targets, coll.id)
			if recursive {
				below, err := cat.ids(tx, `SELECT coll_id FROM r_coll_main WHERE coll_name LIKE ? ESCAPE '\'
					UNION ALL SELECT d.data_id FROM r_data_main d JOIN r_coll_main c ON c.coll_id = d.coll_id
					WHERE c.coll_name = ? OR c.coll_name LIKE ? ESCAPE '\'`, likePrefix(path+"/"), path, likePrefix(path+"/"))
				if err != nil {
					return err
				}
				targets = append(targets, below...)
			}
		} else if d, err := cat.lookupData(tx, path); err != nil {
			return err
		} else if d != nil {
			targets = append(targets, d.id)
		} else {
			return fail(CAT_UNKNOWN_FILE, "%s does not exist", path)
		}
		for _, id := range targets {
			if err := s.requireAccess(tx, id, accessOwn, path); err != nil {
				return err
			}
			if err := cat.setAccess(tx, id, userName, lvl); err != nil {
				return err
			}
		}
		return nil
	})
}

// generalAdmin serves "add user" and "add group member"; passwords are set
// with -user at start (iRODS obfuscates them on the wire).
func generalAdmin(s *session, _ *message, body *node) (reply, error) {
	if s.user.kind != "rodsadmin" {
		return reply{}, fail(SYS_NO_API_PRIV, "%s is not an admin", s.user.name)
	}
	a := func(i int) string { return body.Str("arg" + string(rune('0'+i))) }
	cat := s.srv.cat
	switch {
	case a(0) == "add" && a(1) == "user":
		kind := a(3)
		if kind == "" {
			kind = "rodsuser"
		}
		_, err := cat.addUser(cat.db, a(2), kind, "")
		return reply{}, err
	case a(0) == "modify" && a(1) == "group" && a(3) == "add":
		g, _ := cat.lookupUser(a(2), s.srv.zone)
		u, _ := cat.lookupUser(a(4), s.srv.zone)
		if g == nil || u == nil {
			return reply{}, errUnknownUser
		}
		return reply{}, cat.exec(cat.db, `INSERT INTO r_user_group VALUES (?, ?)`, g.id, u.id)
	}
	return reply{}, fail(SYS_NO_API_PRIV, "general admin %q %q is not served by this peer", a(0), a(1))
}
