package main

// Data objects: stat, open/create (stream and replica-token parallel
// opens), read, write, seek, close, unlink, rename, checksum.

import (
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

const (
	oWRONLY = 1
	oRDWR   = 2
	oCREAT  = 64
	oEXCL   = 128
	oTRUNC  = 512
	oAPPEND = 1024

	replStale        = 0
	replGood         = 1
	replIntermediate = 2
)

type collRow struct {
	id                       int64
	name, owner, inheritance string
	create, modify           string
}

type dataRow struct {
	id, collID, size                  int64
	name, path, owner, checksum, mode string
	create, modify                    string
	replStatus                        int
}

// checkPath accepts absolute, normalized logical paths only: a client's
// "..", "." or "//" never reaches the catalog.
func (s *session) checkPath(p string) error {
	if p == "" || p[0] != '/' || strings.ContainsRune(p, 0) {
		return fail(USER_INPUT_PATH_ERR, "path %q is not absolute", p)
	}
	if p == "/" {
		return nil
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fail(USER_INPUT_PATH_ERR, "path %q is not normalized", p)
		}
	}
	return nil
}

func (c *catalog) lookupColl(q querier, path string) (*collRow, error) {
	r := &collRow{name: path}
	err := c.row(q, `SELECT coll_id, coll_owner_name, coll_inheritance, create_ts, modify_ts
		FROM r_coll_main WHERE coll_name = ?`, path).Scan(&r.id, &r.owner, &r.inheritance, &r.create, &r.modify)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	return r, err
}

func (c *catalog) lookupData(q querier, path string) (*dataRow, error) {
	coll, err := c.lookupColl(q, parentPath(path))
	if err != nil || coll == nil {
		return nil, err
	}
	r := &dataRow{name: baseName(path), collID: coll.id}
	err = c.row(q, `SELECT data_id, data_size, data_path, data_owner_name, data_checksum, data_mode,
		create_ts, modify_ts, data_is_dirty FROM r_data_main WHERE coll_id = ? AND data_name = ? AND data_repl_num = 0`,
		coll.id, r.name).Scan(&r.id, &r.size, &r.path, &r.owner, &r.checksum, &r.mode, &r.create, &r.modify, &r.replStatus)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	return r, err
}

// existingData is lookupData's row; CAT_UNKNOWN_FILE if there is none.
func (c *catalog) existingData(q querier, path string) (*dataRow, error) {
	d, err := c.lookupData(q, path)
	if err == nil && d == nil {
		err = fail(CAT_UNKNOWN_FILE, "%s does not exist", path)
	}
	return d, err
}

// existingColl is lookupColl's row; CAT_UNKNOWN_COLLECTION if there is none.
func (c *catalog) existingColl(q querier, path string) (*collRow, error) {
	coll, err := c.lookupColl(q, path)
	if err == nil && coll == nil {
		err = fail(CAT_UNKNOWN_COLLECTION, "collection %s does not exist", path)
	}
	return coll, err
}

// requireAccess fails with CAT_NO_ACCESS_PERMISSION unless the session's
// user holds at least level on the object.
func (s *session) requireAccess(q querier, objectID int64, level int, path string) error {
	got, err := s.srv.cat.accessOf(q, objectID, s.user.id)
	if err != nil {
		return err
	}
	if got < level {
		return fail(CAT_NO_ACCESS_PERMISSION, "%s needs %s on %s", s.user.name, accessNames[level], path)
	}
	return nil
}

func objStat(s *session, _ *message, body *node) (reply, error) {
	path := body.Str("objPath")
	if err := s.checkPath(path); err != nil {
		return reply{}, err
	}
	cat := s.srv.cat
	statPI := func(size int64, typ int, mode string, id int64, sum, owner, create, modify string) []byte {
		return pack("RodsObjStat_PI", func(b *builder) {
			b.int("objSize", size)
			b.int("objType", int64(typ))
			b.str("dataMode", mode)
			b.str("dataId", strconv.FormatInt(id, 10))
			b.str("chksum", sum)
			b.str("ownerName", owner)
			b.str("ownerZone", s.srv.zone)
			b.str("createTime", create)
			b.str("modifyTime", modify)
			b.nested("SpecColl_PI", func(b *builder) {
				b.int("collClass", 0)
				b.int("type", 0)
				for _, t := range []string{"collection", "objPath", "resource", "rescHier", "phyPath", "cacheDir"} {
					b.str(t, "")
				}
				b.int("cacheDirty", 0)
				b.int("replNum", 0)
			})
		})
	}
	if d, err := cat.lookupData(cat.db, path); err != nil {
		return reply{}, err
	} else if d != nil {
		return reply{intInfo: 1, msg: statPI(d.size, 1, d.mode, d.id, d.checksum, d.owner, d.create, d.modify)}, nil
	}
	if c, err := cat.lookupColl(cat.db, path); err != nil {
		return reply{}, err
	} else if c != nil {
		return reply{intInfo: 2, msg: statPI(0, 2, "", c.id, "", c.owner, c.create, c.modify)}, nil
	}
	return reply{}, fail(USER_FILE_DOES_NOT_EXIST, "%s does not exist", path)
}

// --- open replicas and descriptors ---

// replica is one data object open on one or more descriptors, possibly on
// several connections (python-irodsclient's parallel transfer joins an open
// replica by its token). The first opener finalizes the catalog row when it
// closes, as iRODS requires (irods/irods#6142).
type replica struct {
	token    string
	dataID   int64
	objPath  string
	file     *os.File
	mu       sync.Mutex
	refs     int
	writable bool
}

type replicaTable struct {
	mu   sync.Mutex
	open map[string]*replica
}

type openFile struct {
	rep       *replica
	sendFile  *os.File // reads sent by sendfile: this descriptor's own handle
	offset    int64
	write     bool
	read      bool
	finalizer bool
}

func randomToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func dataInpFields(body *node) (path string, flags int, kv map[string]string) {
	kv = body.KeyVals()
	// The create mode travels with the keywords to the new row (irods4j
	// reads DATA_MODE as an integer).
	kv["\x00createMode"] = strconv.FormatInt(body.Int("createMode"), 10)
	kv["\x00dataSize"] = strconv.FormatInt(body.Int("dataSize"), 10)
	return body.Str("objPath"), int(body.Int("openFlags")), kv
}

func dataObjCreate(s *session, m *message, body *node) (reply, error) {
	path, flags, kv := dataInpFields(body)
	_, force := kv["forceFlag"]
	flags = oWRONLY | oCREAT | oTRUNC
	if !force {
		flags |= oEXCL
	}
	return s.open(path, flags, kv)
}

func dataObjOpen(s *session, m *message, body *node) (reply, error) {
	path, flags, kv := dataInpFields(body)
	return s.open(path, flags, kv)
}

func replicaOpen(s *session, m *message, body *node) (reply, error) {
	path, flags, kv := dataInpFields(body)
	rep, err := s.open(path, flags, kv)
	if err != nil {
		return rep, err
	}
	info, err := s.descriptorInfo(rep.intInfo)
	if err != nil {
		return reply{}, err
	}
	rep.msg = binBytesBuf(info)
	return rep, nil
}

func (s *session) open(path string, flags int, kv map[string]string) (reply, error) {
	if err := s.checkPath(path); err != nil {
		return reply{}, err
	}
	access := flags & 3
	write := access == oWRONLY || access == oRDWR
	read := access == 0 || access == oRDWR
	if token := kv["replicaToken"]; token != "" {
		return s.joinReplica(path, token, read, write)
	}
	cat := s.srv.cat
	var d *dataRow
	var f *os.File
	err := cat.withTx(func(tx *sql.Tx) error {
		var err error
		d, err = cat.lookupData(tx, path)
		if err != nil {
			return err
		}
		if d == nil {
			if c, _ := cat.lookupColl(tx, path); c != nil {
				return fail(CAT_NAME_EXISTS_AS_COLLECTION, "%s is a collection", path)
			}
			if flags&oCREAT == 0 {
				return fail(CAT_UNKNOWN_FILE, "%s does not exist", path)
			}
			coll, err := s.parentToWrite(tx, path)
			if err != nil {
				return err
			}
			if d, err = s.createDataRow(tx, coll, path, kv); err != nil {
				return err
			}
		} else {
			if flags&oEXCL != 0 && flags&oCREAT != 0 {
				return fail(OVERWRITE_WITHOUT_FORCE_FLAG, "%s exists", path)
			}
			need := accessRead
			if write {
				need = accessModify
			}
			if err := s.requireAccess(tx, d.id, need, path); err != nil {
				return err
			}
		}
		fileFlags := os.O_RDWR
		f, err = os.OpenFile(d.path, fileFlags|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("vault file for %s: %v", path, err)
		}
		if write && flags&oTRUNC != 0 {
			if err := f.Truncate(0); err != nil {
				return err
			}
		}
		if write {
			reserve(f, kv["\x00dataSize"])
		}
		if write {
			if err := cat.exec(tx, `UPDATE r_data_main SET data_is_dirty = ? WHERE data_id = ?`, replIntermediate, d.id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		if f != nil {
			f.Close() // opened before the transaction failed
		}
		return reply{}, err
	}
	rep := &replica{token: randomToken(), dataID: d.id, objPath: path, file: f, refs: 1, writable: write}
	s.srv.replicas.mu.Lock()
	s.srv.replicas.open[rep.token] = rep
	s.srv.replicas.mu.Unlock()
	of := &openFile{rep: rep, read: read, write: write, finalizer: true}
	if flags&oAPPEND != 0 {
		st, _ := f.Stat()
		of.offset = st.Size()
	}
	return reply{intInfo: s.addFd(of)}, nil
}

// reserve allocates the vault file's blocks for the size a writer
// announced (DataObjInp's dataSize), keeping its length: streams writing
// their ranges at once then fill blocks already allocated, in any order,
// instead of each extending the file. Best effort: a file system without
// fallocate just allocates as it is written. The replica's size stays
// what was written (finalize stats the file), never the announcement.
func reserve(f *os.File, dataSize string) {
	n, err := strconv.ParseInt(dataSize, 10, 64)
	if err != nil || n <= 0 || n > maxReserveBytes {
		return
	}
	const fallocKeepSize = 1 // FALLOC_FL_KEEP_SIZE
	syscall.Fallocate(int(f.Fd()), fallocKeepSize, 0, n)
}

// maxReserveBytes bounds what one announcement reserves: a client's
// dataSize is a hint, never a way to fill the vault's disk.
const maxReserveBytes = 64 << 30

// parentToWrite is the collection holding path, which the user must be able
// to modify; CAT_UNKNOWN_COLLECTION if it does not exist.
func (s *session) parentToWrite(q querier, path string) (*collRow, error) {
	coll, err := s.srv.cat.existingColl(q, parentPath(path))
	if err != nil {
		return nil, err
	}
	if err := s.requireAccess(q, coll.id, accessModify, coll.name); err != nil {
		return nil, err
	}
	return coll, nil
}

func (s *session) createDataRow(q querier, coll *collRow, path string, kv map[string]string) (*dataRow, error) {
	cat := s.srv.cat
	id, err := cat.newObjectID(q, "data")
	if err != nil {
		return nil, err
	}
	ts := now()
	phys := filepath.Join(s.srv.vault, strconv.FormatInt(id, 10))
	mode := kv["\x00createMode"]
	if mode == "" {
		mode = "0"
	}
	typ := kv["dataType"]
	if typ == "" {
		typ = "generic"
	}
	var rescID int64
	if err := cat.row(q, `SELECT resc_id FROM r_resc_main WHERE resc_name = 'demoResc'`).Scan(&rescID); err != nil {
		return nil, err
	}
	if err := cat.exec(q, `INSERT INTO r_data_main (data_id, coll_id, data_name, data_repl_num, data_type_name,
		data_size, resc_id, data_path, data_owner_name, data_owner_zone, data_is_dirty, data_mode, create_ts, modify_ts)
		VALUES (?, ?, ?, 0, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?)`, id, coll.id, baseName(path), typ, rescID, phys,
		s.user.name, s.srv.zone, replIntermediate, mode, ts, ts); err != nil {
		return nil, err
	}
	inherit := int64(0)
	if coll.inheritance == "1" {
		inherit = coll.id
	}
	if err := cat.grantOwner(q, id, s.user.name, inherit); err != nil {
		return nil, err
	}
	return &dataRow{id: id, collID: coll.id, name: baseName(path), path: phys, owner: s.user.name,
		create: ts, modify: ts, replStatus: replIntermediate}, nil
}

func (s *session) joinReplica(path, token string, read, write bool) (reply, error) {
	s.srv.replicas.mu.Lock()
	rep := s.srv.replicas.open[token]
	if rep != nil {
		rep.mu.Lock()
		rep.refs++
		rep.mu.Unlock()
	}
	s.srv.replicas.mu.Unlock()
	if rep == nil || rep.objPath != path {
		if rep != nil {
			s.release(rep)
		}
		return reply{}, fail(SYS_REPLICA_ACCESS_TOKEN_ERROR, "no open replica of %s with that token", path)
	}
	if write && !rep.writable {
		s.release(rep)
		return reply{}, fail(USER_INCOMPATIBLE_OPEN_FLAGS, "%s is open read-only", path)
	}
	if err := s.requireAccess(s.srv.cat.db, rep.dataID, map[bool]int{true: accessModify, false: accessRead}[write], path); err != nil {
		s.release(rep)
		return reply{}, err
	}
	s.logf("(%s) joined replica (%s)", baseName(path), map[bool]string{true: "write", false: "read"}[write])
	return reply{intInfo: s.addFd(&openFile{rep: rep, read: read, write: write})}, nil
}

func (s *session) addFd(of *openFile) int {
	for s.fds[s.nextFd] != nil {
		s.nextFd++
	}
	fd := s.nextFd
	s.fds[fd] = of
	s.nextFd++
	return fd
}

func (s *session) fd(n int64) (*openFile, error) {
	of := s.fds[int(n)]
	if of == nil {
		return nil, fail(SYS_BAD_FILE_DESCRIPTOR, "descriptor %d is not open", n)
	}
	return of, nil
}

// fdOpenFor is the descriptor body's l1descInx names, which must be open
// for writing (write) or for reading.
func (s *session) fdOpenFor(body *node, write bool) (*openFile, error) {
	of, err := s.fd(body.Int("l1descInx"))
	switch {
	case err != nil:
		return nil, err
	case write && !of.write:
		return nil, fail(SYS_BAD_FILE_DESCRIPTOR, "descriptor is read-only")
	case !write && !of.read:
		return nil, fail(SYS_BAD_FILE_DESCRIPTOR, "descriptor is write-only")
	}
	return of, nil
}

// release drops one reference; the last one closes the vault file.
func (s *session) release(rep *replica) {
	s.srv.replicas.mu.Lock()
	rep.mu.Lock()
	rep.refs--
	last := rep.refs == 0
	rep.mu.Unlock()
	if last {
		delete(s.srv.replicas.open, rep.token)
	}
	s.srv.replicas.mu.Unlock()
	if last {
		rep.file.Close()
	}
}

// finalize writes the replica's size, status and time to the catalog.
func (s *session) finalize(rep *replica) error {
	st, err := rep.file.Stat()
	if err != nil {
		return err
	}
	return s.srv.cat.exec(s.srv.cat.db, `UPDATE r_data_main SET data_size = ?, data_is_dirty = ?, modify_ts = ?,
		data_checksum = '' WHERE data_id = ?`, st.Size(), replGood, now(), rep.dataID)
}

func (s *session) closeFd(n int64, updateCatalog bool) error {
	of, err := s.fd(n)
	if err != nil {
		return err
	}
	delete(s.fds, int(n))
	if n < int64(s.nextFd) {
		s.nextFd = int(n)
	}
	if of.sendFile != nil {
		of.sendFile.Close()
	}
	defer s.release(of.rep)
	if of.write && updateCatalog {
		return s.finalize(of.rep)
	}
	return nil
}

// closeAll runs when a connection ends. A writer that vanished without
// closing leaves its replica stale (as iRODS does), never marked good: a
// partial object is never reported complete.
func (s *session) closeAll() {
	for n, of := range s.fds {
		if of.write && of.finalizer {
			if st, err := of.rep.file.Stat(); err == nil {
				s.srv.cat.exec(s.srv.cat.db, `UPDATE r_data_main SET data_size = ?, data_is_dirty = ?, modify_ts = ?
					WHERE data_id = ?`, st.Size(), replStale, now(), of.rep.dataID)
			}
			s.logf("%s left stale: its writer's connection ended before close", of.rep.objPath)
		}
		s.closeFd(int64(n), false)
	}
}

func dataObjClose(s *session, _ *message, body *node) (reply, error) {
	n := body.Int("l1descInx")
	of, err := s.fd(n)
	if err != nil {
		return reply{}, err
	}
	return reply{}, s.closeFd(n, of.finalizer || of.write)
}

func replicaClose(s *session, _ *message, body *node) (reply, error) {
	raw, err := body.Base64Buf()
	if err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "%v", err)
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "replica close input is not JSON: %v", err)
	}
	fdNum, _ := in["fd"].(float64)
	update := true
	for _, k := range []string{"update_size", "update_status"} {
		if v, ok := in[k].(bool); ok && !v {
			update = false
		}
	}
	return reply{}, s.closeFd(int64(fdNum), update)
}

func dataObjLseek(s *session, _ *message, body *node) (reply, error) {
	of, err := s.fd(body.Int("l1descInx"))
	if err != nil {
		return reply{}, err
	}
	off, whence := body.Int("offset"), body.Int("whence")
	var base int64
	switch whence {
	case 0:
	case 1:
		base = of.offset
	case 2:
		st, err := of.rep.file.Stat()
		if err != nil {
			return reply{}, err
		}
		base = st.Size()
	default:
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "whence %d", whence)
	}
	if base+off < 0 {
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "seek to negative offset %d", base+off)
	}
	of.offset = base + off
	return reply{msg: pack("fileLseekOut_PI", func(b *builder) { b.int("offset", of.offset) })}, nil
}

func dataObjRead(s *session, _ *message, body *node) (reply, error) {
	of, err := s.fdOpenFor(body, false)
	if err != nil {
		return reply{}, err
	}
	n := body.Int("len")
	if n < 0 || n > maxBsBytes {
		return reply{}, fail(SYS_INVALID_INPUT_PARAM, "read length %d outside 0..%d", n, maxBsBytes)
	}
	// One line a read, so tests can count the reads a client asks for.
	s.logf("(%s) read %d at %d", baseName(of.rep.objPath), n, of.offset)
	if n >= sendfileMinBytes {
		if rep, ok := s.readBySendfile(of, n); ok {
			return rep, nil
		}
	}
	if int64(cap(s.bsOut)) < n {
		s.bsOut = make([]byte, n)
	}
	buf := s.bsOut[:n]
	got, err := of.rep.file.ReadAt(buf, of.offset)
	if err != nil && err != io.EOF {
		return reply{}, err
	}
	of.offset += int64(got)
	return reply{intInfo: got, bs: buf[:got]}, nil
}

// Reads of at least this many bytes go out by sendfile from the
// descriptor's own handle on the vault file (no copy through the peer's
// memory); smaller ones are read into a buffer.
const sendfileMinBytes = 1 << 20

// readBySendfile answers a read with the bytes the vault file holds at the
// descriptor's offset, sent by the kernel. Each descriptor reads through
// its own handle (opened on first use), whose offset is the descriptor's:
// joined streams of one replica never move each other's. false: use the
// buffered path (the handle could not be opened or stat'ed).
func (s *session) readBySendfile(of *openFile, n int64) (reply, bool) {
	if of.sendFile == nil {
		f, err := os.Open(of.rep.file.Name())
		if err != nil {
			return reply{}, false
		}
		of.sendFile = f
	}
	st, err := of.rep.file.Stat()
	if err != nil {
		return reply{}, false
	}
	got := min(n, max(0, st.Size()-of.offset))
	if _, err := of.sendFile.Seek(of.offset, io.SeekStart); err != nil {
		return reply{}, false
	}
	of.offset += got
	return reply{intInfo: int(got), bsFile: of.sendFile, bsLen: int(got)}, true
}

func dataObjWrite(s *session, m *message, body *node) (reply, error) {
	of, err := s.fdOpenFor(body, true)
	if err != nil {
		return reply{}, err
	}
	if n := body.Int("len"); n != int64(len(m.Bs)) {
		return reply{}, fail(SYS_API_INPUT_ERR, "write len %d but %d bytes sent", n, len(m.Bs))
	}
	got, err := of.rep.file.WriteAt(m.Bs, of.offset)
	if err != nil {
		return reply{}, err
	}
	of.offset += int64(got)
	return reply{intInfo: got}, nil
}

func (s *session) descriptorInfo(fd int) ([]byte, error) {
	of, err := s.fd(int64(fd))
	if err != nil {
		return nil, err
	}
	d := map[string]any{
		"fd":            fd,
		"replica_token": of.rep.token,
		"data_object_info": map[string]any{
			"object_path": of.rep.objPath, "data_id": of.rep.dataID, "replica_number": 0,
			"resource_hierarchy": "demoResc", "resource_name": "demoResc",
		},
	}
	return json.Marshal(d)
}

func fileDescriptorInfo(s *session, _ *message, body *node) (reply, error) {
	raw, err := body.Base64Buf()
	if err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "%v", err)
	}
	var in struct{ Fd int }
	if err := json.Unmarshal(raw, &in); err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "descriptor info input: %v", err)
	}
	out, err := s.descriptorInfo(in.Fd)
	if err != nil {
		return reply{}, err
	}
	return reply{msg: binBytesBuf(out)}, nil
}

func dataObjUnlink(s *session, _ *message, body *node) (reply, error) {
	path := body.Str("objPath")
	if err := s.checkPath(path); err != nil {
		return reply{}, err
	}
	cat := s.srv.cat
	var d *dataRow
	err := cat.withTx(func(tx *sql.Tx) error {
		var err error
		if d, err = cat.existingData(tx, path); err != nil {
			return err
		}
		if err := s.requireAccess(tx, d.id, accessOwn, path); err != nil {
			return err
		}
		if err := cat.deleteObjects(tx, []int64{d.id}); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return reply{}, err
	}
	os.Remove(d.path)
	return reply{}, nil
}

// deleteObjects removes catalog rows of data objects (vault files are the
// caller's to remove once the transaction commits).
func (c *catalog) deleteObjects(q querier, ids []int64) error {
	for _, id := range ids {
		for _, stmt := range []string{
			`DELETE FROM r_data_main WHERE data_id = ?`,
			`DELETE FROM r_objt_access WHERE object_id = ?`,
			`DELETE FROM r_objt_metamap WHERE object_id = ?`,
		} {
			if err := c.exec(q, stmt, id); err != nil {
				return err
			}
		}
	}
	return nil
}

func dataObjRename(s *session, _ *message, body *node) (reply, error) {
	inps := body.All("DataObjInp_PI")
	if len(inps) != 2 {
		return reply{}, fail(SYS_API_INPUT_ERR, "rename needs two DataObjInp_PI")
	}
	src, dst := inps[0].Str("objPath"), inps[1].Str("objPath")
	for _, p := range []string{src, dst} {
		if err := s.checkPath(p); err != nil {
			return reply{}, err
		}
	}
	cat := s.srv.cat
	return reply{}, cat.withTx(func(tx *sql.Tx) error {
		dstParent, err := s.parentToWrite(tx, dst)
		if err != nil {
			return err
		}
		if d, _ := cat.lookupData(tx, dst); d != nil {
			return fail(CAT_NAME_EXISTS_AS_DATAOBJ, "%s exists", dst)
		}
		if c, _ := cat.lookupColl(tx, dst); c != nil {
			return fail(CAT_NAME_EXISTS_AS_COLLECTION, "%s exists", dst)
		}
		if d, err := cat.lookupData(tx, src); err != nil {
			return err
		} else if d != nil {
			if err := s.requireAccess(tx, d.id, accessOwn, src); err != nil {
				return err
			}
			if err := cat.exec(tx, `UPDATE r_data_main SET coll_id = ?, data_name = ?, modify_ts = ? WHERE data_id = ?`,
				dstParent.id, baseName(dst), now(), d.id); err != nil {
				return err
			}
			return nil
		}
		c, err := cat.lookupColl(tx, src)
		if err != nil {
			return err
		}
		if c == nil {
			return fail(CAT_UNKNOWN_FILE, "%s does not exist", src)
		}
		if strings.HasPrefix(dst+"/", src+"/") {
			return fail(SYS_INVALID_INPUT_PARAM, "cannot move %s into itself", src)
		}
		if err := s.requireAccess(tx, c.id, accessOwn, src); err != nil {
			return err
		}
		// Every descendant's name and parent name change by prefix.
		n := len(src)
		for _, stmt := range []string{
			`UPDATE r_coll_main SET parent_coll_name = ? || SUBSTR(parent_coll_name, ?) WHERE parent_coll_name = ? OR parent_coll_name LIKE ? ESCAPE '\'`,
			`UPDATE r_coll_main SET coll_name = ? || SUBSTR(coll_name, ?) WHERE coll_name = ? OR coll_name LIKE ? ESCAPE '\'`,
		} {
			if err := cat.exec(tx, stmt, dst, n+1, src, likePrefix(src+"/")); err != nil {
				return err
			}
		}
		if err := cat.exec(tx, `UPDATE r_coll_main SET parent_coll_name = ?, modify_ts = ? WHERE coll_id = ?`,
			dstParent.name, now(), c.id); err != nil {
			return err
		}
		return nil
	})
}

func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

func dataObjChksum(s *session, _ *message, body *node) (reply, error) {
	path := body.Str("objPath")
	cat := s.srv.cat
	d, err := cat.existingData(cat.db, path)
	if err != nil {
		return reply{}, err
	}
	if err := s.requireAccess(cat.db, d.id, accessRead, path); err != nil {
		return reply{}, err
	}
	f, err := os.Open(d.path)
	if err != nil {
		return reply{}, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return reply{}, err
	}
	sum := "sha2:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
	if err := cat.exec(cat.db, `UPDATE r_data_main SET data_checksum = ? WHERE data_id = ?`, sum, d.id); err != nil {
		return reply{}, err
	}
	return reply{msg: strPI(sum)}, nil
}

func resourceInfoForOperation(s *session, _ *message, body *node) (reply, error) {
	out, _ := json.Marshal(map[string]string{"host": "localhost", "resource_hierarchy": "demoResc"})
	return reply{msg: strPI(string(out))}, nil
}

func touch(s *session, _ *message, body *node) (reply, error) {
	raw, err := body.Base64Buf()
	if err != nil {
		return reply{}, fail(SYS_API_INPUT_ERR, "%v", err)
	}
	// 4.3's options: seconds_since_epoch sets that time instead of now;
	// no_create touches only what exists.
	var in struct {
		LogicalPath string `json:"logical_path"`
		Options     struct {
			NoCreate bool   `json:"no_create"`
			Seconds  *int64 `json:"seconds_since_epoch"`
		} `json:"options"`
	}
	if err := json.Unmarshal(raw, &in); err != nil || in.LogicalPath == "" {
		return reply{}, fail(SYS_API_INPUT_ERR, "touch input: %v", err)
	}
	ts := now()
	if in.Options.Seconds != nil {
		if *in.Options.Seconds < 0 {
			return reply{}, fail(SYS_API_INPUT_ERR, "touch: seconds_since_epoch %d is negative", *in.Options.Seconds)
		}
		ts = fmt.Sprintf("%011d", *in.Options.Seconds)
	}
	cat := s.srv.cat
	if d, _ := cat.lookupData(cat.db, in.LogicalPath); d != nil {
		return reply{}, cat.exec(cat.db, `UPDATE r_data_main SET modify_ts = ? WHERE data_id = ?`, ts, d.id)
	}
	if c, _ := cat.lookupColl(cat.db, in.LogicalPath); c != nil {
		return reply{}, cat.exec(cat.db, `UPDATE r_coll_main SET modify_ts = ? WHERE coll_id = ?`, ts, c.id)
	}
	if in.Options.NoCreate {
		return reply{}, fail(OBJ_PATH_DOES_NOT_EXIST, "touch %s: no such object (no_create)", in.LogicalPath)
	}
	rep, err := s.open(in.LogicalPath, oWRONLY|oCREAT, map[string]string{})
	if err != nil {
		return reply{}, err
	}
	return reply{}, s.closeFd(int64(rep.intInfo), true)
}
