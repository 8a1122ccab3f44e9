// Package offline holds every etcdutl operation, all of them on files no server holds: a
// stopped member's data directory (backup, defrag, migrate, hashkv) and snapshot files (status,
// restore). None changes anything it was not asked to change. The file layouts come from
// etcdx/server/schema, a new cluster's members from etcdx/server/membership.
//
// The files:
//
//	datadir.go     a data dir checked and its database opened safely
//	guard.go       the exported operations, each under the guard that turns a damaged file into an
//	               error
//	backup.go      backup
//	check.go       check: the WAL, snapshot files and database, and whether they agree
//	defrag.go      defrag
//	hashkv.go      hashkv
//	migrate.go     migrate (storage versions both ways)
//	snapshot.go    snapshot status and restore
//	membership.go  the memberships a data dir records
//	survey.go      SurveyDataDir: what a data dir holds, for assess
//	v2store.go     the v2 store's custom content and the WAL's view of it
package offline
