#ifndef MEISHI_SQLITE_H
#define MEISHI_SQLITE_H

/// sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, 0): closing the last connection no
/// longer copies the write-ahead log into the database file. sqlite3_db_config is variadic, which
/// Swift cannot call. `db` is the connection's sqlite3 pointer (kept opaque here, so this header
/// does not bring a second copy of sqlite3.h's types into Swift beside GRDB's). 0 on success.
int meishi_sqlite_no_checkpoint_on_close(void *_Nonnull db);

#endif
