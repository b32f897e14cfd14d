// ferry-irods-peer: a protocol-accurate iRODS server for tests. It speaks
// the XML protocol (start-up, negotiation, legacy and 4.3 native auth,
// catalog queries, collection and data-object calls, the parallel transfer
// python-irodsclient uses) over an iCAT-shaped catalog in SQLite or
// PostgreSQL and a vault folder. Test infrastructure: no plugins, no rule
// engine, no federation, plain TCP only.
//
//	ferry-irods-peer -data DIR [-addr 127.0.0.1:0] [-db URL] [-zone tempZone]
//	                 [-user NAME:PASSWORD[:TYPE]]... [-port-file FILE]
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type server struct {
	cat      *catalog
	vault    string
	zone     string
	version  string
	log      *log.Logger
	started  time.Time
	replicas replicaTable
}

type userFlags []bootUser

func (u *userFlags) String() string { return fmt.Sprint(*u) }
func (u *userFlags) Set(v string) error {
	parts := strings.Split(v, ":")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return fmt.Errorf("want NAME:PASSWORD[:TYPE], got %q", v)
	}
	kind := "rodsuser"
	if len(parts) > 2 {
		kind = parts[2]
	}
	*u = append(*u, bootUser{name: parts[0], password: parts[1], kind: kind})
	return nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:1247", "listen address (port 0 picks a free port)")
	data := flag.String("data", "", "data folder: catalog.db and vault/ live here (required)")
	dbURL := flag.String("db", "", "catalog URL: sqlite://FILE (default DATA/catalog.db) or postgres://...")
	zone := flag.String("zone", "tempZone", "zone name")
	version := flag.String("version", "rods4.3.2", "relVersion announced to clients")
	portFile := flag.String("port-file", "", "write the listening port here once serving")
	users := userFlags{}
	flag.Var(&users, "user", "NAME:PASSWORD[:TYPE] to create or update (repeatable); rods:rods:rodsadmin is always there")
	flag.Parse()
	logger := log.New(os.Stderr, "irods-peer ", log.LstdFlags|log.Lmicroseconds)
	if *data == "" {
		logger.Fatal("-data is required")
	}
	vault := filepath.Join(*data, "vault")
	if err := os.MkdirAll(vault, 0o755); err != nil {
		logger.Fatal(err)
	}
	if *dbURL == "" {
		*dbURL = "sqlite://" + filepath.Join(*data, "catalog.db")
	}
	cat, err := openCatalog(*dbURL, *zone)
	if err != nil {
		logger.Fatal(err)
	}
	all := append(userFlags{{name: "rods", password: "rods", kind: "rodsadmin"}}, users...)
	if err := cat.bootstrap(vault, all); err != nil {
		logger.Fatalf("bootstrap: %v", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		logger.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if *portFile != "" {
		tmp := *portFile + ".tmp"
		os.WriteFile(tmp, []byte(fmt.Sprintf("%d\n", port)), 0o644)
		os.Rename(tmp, *portFile)
	}
	logger.Printf("serving zone %s on %s (catalog %s, vault %s)", *zone, ln.Addr(), *dbURL, vault)
	srv := &server{cat: cat, vault: vault, zone: *zone, version: *version, log: logger, started: time.Now()}
	srv.replicas.open = map[string]*replica{}

	var wg sync.WaitGroup
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		logger.Printf("stopping")
		ln.Close()
	}()
	for {
		conn, err := ln.Accept()
		if err != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			srv.serve(conn)
		}()
	}
	// Open connections end with the process: replicas are finalized as
	// each session closes its descriptors.
	cat.db.Close()
	// Benchmarks put the peer's CPU time beside the client's: a ratio
	// against another client is then the clients' difference.
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	logger.Printf("stopped: cpu user %.3fs sys %.3fs", time.Duration(ru.Utime.Nano()).Seconds(),
		time.Duration(ru.Stime.Nano()).Seconds())
}

var handlers map[int]handler

func init() {
	handlers = map[int]handler{
		700:    miscServerInfo,
		703:    authRequest,
		704:    authResponse,
		110000: authFramework,
		633:    objStat,
		702:    genQuery1,
		10221:  genQuery2,
		722:    specificQuery,
		681:    collCreate,
		679:    rmColl,
		601:    dataObjCreate,
		602:    dataObjOpen,
		20003:  replicaOpen,
		673:    dataObjClose,
		20004:  replicaClose,
		674:    dataObjLseek,
		675:    dataObjRead,
		676:    dataObjWrite,
		20000:  fileDescriptorInfo,
		615:    dataObjUnlink,
		627:    dataObjRename,
		629:    dataObjChksum,
		706:    modAVU,
		707:    modAccessControl,
		701:    generalAdmin,
		10220:  resourceInfoForOperation,
		20007:  touch,
	}
}
