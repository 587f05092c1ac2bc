"""The index's schema: one SQL script per version (``PRAGMA user_version``), applied in order by
:class:`memoryd.store.database.Store` in one transaction each. Append; never edit a shipped one."""

from __future__ import annotations

from typing import cast

import apsw

from memoryd.quarantine import TRANSCRIPT_KINDS
from memoryd.text import index_text, keyword_text

MIGRATIONS: tuple[str, ...] = (
    # 1: entries, full-text index, events
    """
    CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE entries(
        id INTEGER PRIMARY KEY,
        uid TEXT NOT NULL UNIQUE,
        agent TEXT NOT NULL,
        project TEXT,
        kind TEXT NOT NULL,
        category TEXT NOT NULL DEFAULT '',
        key TEXT,
        text TEXT NOT NULL,
        hash TEXT NOT NULL,
        confidence REAL NOT NULL,
        tags TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'active',
        created REAL NOT NULL,
        updated REAL NOT NULL,
        writer TEXT,
        via TEXT NOT NULL,
        session TEXT,
        source TEXT,
        line_start INTEGER,
        line_end INTEGER,
        message_id TEXT,
        superseded_by TEXT
    );
    CREATE INDEX entries_scope ON entries(agent, category, status);
    CREATE INDEX entries_hash ON entries(hash);
    CREATE INDEX entries_key ON entries(agent, key) WHERE key IS NOT NULL;
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        text, category, tags,
        content='entries', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, new.text, new.category, new.tags);
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, old.text, old.category, old.tags);
    END;
    CREATE TRIGGER entries_au AFTER UPDATE OF text, category, tags ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, old.text, old.category, old.tags);
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, new.text, new.category, new.tags);
    END;
    CREATE TABLE events(
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        uid TEXT NOT NULL,
        action TEXT NOT NULL,
        actor TEXT,
        before TEXT,
        after TEXT
    );
    CREATE INDEX events_uid ON events(uid);
    """,
    # 2: watched files, the session registry, the queue of entries awaiting a vector
    """
    ALTER TABLE entries ADD COLUMN polarity TEXT;
    CREATE INDEX entries_source ON entries(source);
    CREATE TABLE files(
        id INTEGER PRIMARY KEY,
        path TEXT NOT NULL UNIQUE,
        source TEXT NOT NULL,
        kind TEXT NOT NULL,
        agent TEXT NOT NULL,
        device INTEGER,
        inode INTEGER,
        size INTEGER,
        mtime REAL,
        offset INTEGER NOT NULL DEFAULT 0,
        description TEXT,
        type TEXT,
        pinned INTEGER NOT NULL DEFAULT 0,
        frontmatter TEXT,
        indexed REAL,
        error TEXT
    );
    CREATE INDEX files_inode ON files(device, inode);
    CREATE TABLE sessions(
        id TEXT PRIMARY KEY,
        harness TEXT NOT NULL,
        agent TEXT NOT NULL,
        cwd TEXT,
        project TEXT,
        started REAL,
        last_seen REAL,
        user_messages INTEGER NOT NULL DEFAULT 0,
        source TEXT,
        closed REAL
    );
    CREATE TABLE vector_queue(rowid INTEGER PRIMARY KEY);
    INSERT INTO vector_queue(rowid) SELECT id FROM entries;
    CREATE TRIGGER entries_queue_ai AFTER INSERT ON entries BEGIN
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.id);
    END;
    CREATE TRIGGER entries_queue_au AFTER UPDATE OF text ON entries BEGIN
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.id);
    END;
    CREATE TRIGGER entries_queue_ad AFTER DELETE ON entries BEGIN
        DELETE FROM vector_queue WHERE rowid = old.id;
    END;
    """,
    # 3: session lifecycle (hooks) and the injection log
    """
    ALTER TABLE sessions ADD COLUMN transcript_path TEXT;
    ALTER TABLE sessions ADD COLUMN last_message TEXT;
    ALTER TABLE sessions ADD COLUMN extracted REAL;
    CREATE TABLE injections(
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        session TEXT,
        agent TEXT NOT NULL,
        event TEXT NOT NULL,
        chars INTEGER NOT NULL,
        budget INTEGER NOT NULL,
        items TEXT NOT NULL
    );
    CREATE INDEX injections_session ON injections(session, ts);
    """,
    # 4: the memory block reads an agent's newest entries of one kind
    """
    CREATE INDEX entries_kind ON entries(agent, kind, status, created);
    """,
    # 5: an entry's parts (sentences) get vectors of their own; everything is embedded again
    """
    CREATE TABLE part_vectors(entry INTEGER PRIMARY KEY, vectors BLOB NOT NULL);
    INSERT OR IGNORE INTO vector_queue(rowid) SELECT id FROM entries;
    """,
    # 6: maintenance passes: their runs and every change they make (before/after, undoable);
    # how often an entry was seen (merged duplicates), and what it names that is gone
    """
    ALTER TABLE entries ADD COLUMN occurrences INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE entries ADD COLUMN stale TEXT;
    CREATE TABLE runs(
        id INTEGER PRIMARY KEY,
        pass TEXT NOT NULL,
        started REAL NOT NULL,
        finished REAL,
        status TEXT NOT NULL,
        dry_run INTEGER NOT NULL DEFAULT 0,
        scope TEXT,
        counts TEXT,
        error TEXT
    );
    CREATE INDEX runs_pass ON runs(pass, started);
    CREATE TABLE changes(
        id INTEGER PRIMARY KEY,
        run INTEGER NOT NULL,
        kind TEXT NOT NULL,
        target TEXT NOT NULL,
        action TEXT NOT NULL,
        why TEXT,
        before TEXT,
        after TEXT,
        state TEXT NOT NULL,
        ts REAL NOT NULL,
        undoes INTEGER,
        grp INTEGER
    );
    CREATE INDEX changes_state ON changes(state);
    CREATE INDEX entries_updated ON entries(updated);
    CREATE INDEX changes_run ON changes(run);
    CREATE INDEX changes_target ON changes(target, state);
    """,
    # 7 (retain): forget and supersede that outlive their entry. A file entry gets a new uid
    # when it is indexed again (after a reindex, a file deleted and written back), so its
    # status is kept under what identifies its text: "hash:<content hash>"; a transcript
    # chunk's uid is stable: "uid:<uid>". The indexer applies a mark to an entry it inserts.
    """
    CREATE TABLE marks(
        agent TEXT NOT NULL,
        target TEXT NOT NULL,
        status TEXT NOT NULL,
        superseded_by TEXT,
        actor TEXT,
        ts REAL NOT NULL,
        PRIMARY KEY (agent, target)
    ) WITHOUT ROWID;
    """,
    # 8 (staleness pass): what each entry names (memoryd.passes.references) and when each
    # thing was first seen in its project; each project's working tree as last checked
    """
    CREATE TABLE entry_refs(
        entry INTEGER NOT NULL,
        ref TEXT NOT NULL,
        seen REAL,
        PRIMARY KEY (entry, ref)
    ) WITHOUT ROWID;
    CREATE TRIGGER entries_refs_ad AFTER DELETE ON entries BEGIN
        DELETE FROM entry_refs WHERE entry = old.id;
    END;
    CREATE TABLE stale_projects(
        project TEXT PRIMARY KEY,
        fingerprint TEXT NOT NULL,
        checked REAL NOT NULL
    );
    CREATE INDEX entries_project ON entries(project, status, kind);
    """,
    # 9 (quarantine, memoryd.quarantine): text that looks like an instruction to the model is
    # stored but never injected until a person releases it; existing rows are flagged once
    # migrated (Store._flag_quarantine)
    """
    ALTER TABLE entries ADD COLUMN quarantined INTEGER NOT NULL DEFAULT 0;
    """,
    # 10 (memoryd.store.lexicon): each stemmed word of the entries, embedded alone by the
    # bound model (int8 and its scale), for search's word alignment; derived, refilled from the
    # entries after a model change (meta "lexicon_rowid" is how far the filling got)
    """
    CREATE TABLE lexicon(
        stem TEXT PRIMARY KEY,
        word TEXT NOT NULL,
        scale REAL NOT NULL,
        vector BLOB NOT NULL
    ) WITHOUT ROWID;
    """,
    # 11: an entry goes back to be embedded only when its text changes, not whenever an UPDATE
    # names the column (a pass moving entries into an archive and back re-embedded them all)
    """
    DROP TRIGGER entries_queue_au;
    CREATE TRIGGER entries_queue_au AFTER UPDATE OF text ON entries
    WHEN new.text IS NOT old.text BEGIN
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.id);
    END;
    """,
    # 12: the passes' changes looked up by what a change is (promotion's applied rules, the open
    # proposals and contradictions); by state alone, or by target, it scanned every change
    # ever recorded (0.4 s with 300k changes, on the database thread)
    """
    CREATE INDEX changes_kind ON changes(kind, action, state);
    """,
    # 13: transcript chunks are judged by their messages, not memoryd's own speaker labels
    # (memoryd.quarantine: every exchange with an answer was quarantined); existing entries
    # are judged again (Store._flag_quarantine)
    """
    SELECT 1;
    """,
    # 14: a transcript file's problem names the lines that could not be read, not those left
    # out on purpose (a slash command's wrapper, memoryd's own block): every session with a
    # slash command made `memory status` warn. Existing files' problems are rewritten
    # (:func:`only_unreadable_lines`)
    """
    SELECT 1;
    """,
    # 15: the retain pass walks the transcript chunks changed since its mark: through every
    # entry's `updated`, a step of 256 chunks scanned the API entries between them too (30 ms
    # a step on the bench's 72k-entry store, held on the database thread; 2.3 ms with this)
    """
    CREATE INDEX IF NOT EXISTS entries_transcripts_updated ON entries(updated, id)
        WHERE via = 'watch' AND uid >= 't' AND uid < 'u';
    """,
    # 16: what a memory file's entries were made from (memoryd.ingest.file_read.memory_key) and
    # its project: a file read again as it was indexed — the notebook pass indexes what it
    # writes at once — is not parsed again (the watcher re-read the thousand notebooks a pass
    # rewrote: 1.2 s on the database thread). Files indexed before have none: parsed next time
    """
    ALTER TABLE files ADD COLUMN text_key TEXT;
    ALTER TABLE files ADD COLUMN project TEXT;
    """,
    # 17: the turns a transcript chunk covers (the record ids, a JSON list), so that a hit maps
    # back to them; and its session's chunks in order, for the turns around a hit
    """
    ALTER TABLE entries ADD COLUMN records TEXT;
    CREATE INDEX entries_session ON entries(session, created) WHERE session IS NOT NULL;
    """,
    # 18: the keyword index holds each entry's index text (``memoryd.text.index_text``: no
    # redaction markers, a fact's key in words), read through a view so that FTS5's own
    # rebuild and checks see what the triggers wrote; a key change re-embeds the entry, and
    # the entries whose index text is not their text are embedded again
    """
    DROP TRIGGER entries_ai;
    DROP TRIGGER entries_ad;
    DROP TRIGGER entries_au;
    DROP TABLE entries_fts;
    CREATE VIEW entries_indexed AS
        SELECT id, index_text(text, key) AS text, category, tags FROM entries;
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        text, category, tags,
        content='entries_indexed', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, index_text(new.text, new.key), new.category, new.tags);
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, index_text(old.text, old.key), old.category, old.tags);
    END;
    CREATE TRIGGER entries_au AFTER UPDATE OF text, key, category, tags ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, index_text(old.text, old.key), old.category, old.tags);
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, index_text(new.text, new.key), new.category, new.tags);
    END;
    INSERT INTO entries_fts(entries_fts) VALUES ('rebuild');
    DROP TRIGGER entries_queue_au;
    CREATE TRIGGER entries_queue_au AFTER UPDATE OF text, key ON entries
    WHEN new.text IS NOT old.text OR new.key IS NOT old.key BEGIN
        INSERT OR IGNORE INTO vector_queue(rowid) VALUES (new.id);
    END;
    INSERT OR IGNORE INTO vector_queue(rowid)
        SELECT id FROM entries WHERE index_text(text, key) != text;
    """,
    # 19 (memoryd.store.usage): what became of each entry injected into a session — followed,
    # broken, no occasion, or not judged yet (outcome NULL) — with its evidence; an entry's
    # usage record is the sum of its rows. Keyed by the entry's uid, never deleted with it: a
    # pass that archives or merges an entry, and the undo of that pass, leave its history be.
    # ``sessions.judged``: when its outcomes were last judged (again when last_seen passes it)
    """
    CREATE TABLE outcomes(
        entry TEXT NOT NULL,
        session TEXT NOT NULL,
        agent TEXT NOT NULL,
        injected REAL NOT NULL,
        injections INTEGER NOT NULL DEFAULT 1,
        outcome TEXT,
        why TEXT,
        evidence TEXT,
        at REAL,
        judged REAL,
        PRIMARY KEY (entry, session)
    ) WITHOUT ROWID;
    CREATE INDEX outcomes_session ON outcomes(session);
    ALTER TABLE sessions ADD COLUMN judged REAL;
    """,
    # 20 (memoryd.store.usage.Disuse): when an entry was last followed or broken, read for
    # each lesson and note of a memory block: one index step, where its rows (one a session it
    # was injected into: thousands for a lesson in every block) would all be read
    """
    CREATE INDEX outcomes_used ON outcomes(entry, coalesce(at, injected))
        WHERE outcome IN ('followed', 'broken');
    """,
    # 21 (memoryd.store.archive): the transcript versions an archive holds although the retain
    # pass did not copy them: restored from an archive (a sync's, or at start) with an
    # ``updated`` past the pass's mark. The pass skips a row whose version is here, and
    # forgets the rows its mark has passed
    """
    CREATE TABLE archived_turns(uid TEXT PRIMARY KEY, updated REAL NOT NULL) WITHOUT ROWID;
    """,
    # 22 (memoryd.store.vector_rows): the entries whose vector is their sentences' mean, made
    # by the vector backlog to be searchable sooner, and to be refined by a run over the text
    """
    CREATE TABLE vector_refine(rowid INTEGER PRIMARY KEY);
    CREATE TRIGGER entries_refine_ad AFTER DELETE ON entries BEGIN
        DELETE FROM vector_refine WHERE rowid = old.id;
    END;
    """,
    # 23 (memoryd.store.query, the order "day, surest"): the notes of a memory block, newest
    # day first and the more confident ahead within a day, read in that order an agent at a
    # time; the order read every note's row to sort them (4,000 notes: 7-9 ms of a session's
    # start; 26-48 ms at 100k entries)
    """
    CREATE INDEX entries_notes_day ON entries(
        agent, status, CAST(created / 86400 AS INTEGER), confidence, created)
        WHERE kind = 'note';
    """,
    # 24 (memoryd.store.query, EntryReads.entries_in_project): a kind's entries of some agents
    # in one project (or global), newest first, and the block's notes in their order: an
    # agent's come in that order, and a read stops at its limit. The block's feedback and
    # facts were read through (project, status, kind) whole and sorted (40-50 ms each at
    # 100,000 global entries), its notes of a project through entries_notes_day, every note
    # of the agent (42 ms there for a project with none)
    """
    DROP INDEX entries_project;
    CREATE INDEX entries_project ON entries(project, status, kind, agent, created);
    CREATE INDEX entries_notes_day_project ON entries(
        project, status, agent, CAST(created / 86400 AS INTEGER), confidence, created)
        WHERE kind = 'note';
    """,
    # 25 (memoryd.store.usage_log.outcome_event): a first verdict of "no occasion" is no
    # event: one a session, for most entries, made `memory history` (and the MCP tool an
    # agent calls before changing a memory) thousands of identical lines
    """
    DELETE FROM events WHERE action = 'outcome' AND before IS NULL
        AND json_extract(after, '$.outcome') = 'no occasion';
    """,
    # 26: words in any script: the keyword index reads each Han, Kana and Hangul character as a
    # word, and a symbol too (``memoryd.text.keyword_text``; its tokenizer, KEYWORD_TOKENIZER,
    # keeps Unicode's "other symbols"): a run of those scripts was one word ("東京オフィスの"),
    # which no question names whole, and ✅ no word at all. The index is made again from the
    # entries (what a vector is made of does not change)
    """
    DROP TRIGGER entries_ai;
    DROP TRIGGER entries_ad;
    DROP TRIGGER entries_au;
    DROP TABLE entries_fts;
    DROP VIEW entries_indexed;
    CREATE VIEW entries_indexed AS
        SELECT id, keyword_text(index_text(text, key)) AS text, keyword_text(category)
            AS category, keyword_text(tags) AS tags FROM entries;
    CREATE VIRTUAL TABLE entries_fts USING fts5(
        text, category, tags,
        content='entries_indexed', content_rowid='id',
        tokenize="porter unicode61 remove_diacritics 2 categories 'L* N* Co So'"
    );
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, keyword_text(index_text(new.text, new.key)), keyword_text(new.category),
                keyword_text(new.tags));
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, keyword_text(index_text(old.text, old.key)),
                keyword_text(old.category), keyword_text(old.tags));
    END;
    CREATE TRIGGER entries_au AFTER UPDATE OF text, key, category, tags ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, keyword_text(index_text(old.text, old.key)),
                keyword_text(old.category), keyword_text(old.tags));
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, keyword_text(index_text(new.text, new.key)), keyword_text(new.category),
                keyword_text(new.tags));
    END;
    INSERT INTO entries_fts(entries_fts) VALUES ('rebuild');
    """,
    # 27: a memory file's entry is searchable by the titles of the headings it is under
    # (``heading``, memoryd.ingest.markdown's ``title_path``: "Claude Memory › Kestrelwood
    # migration"), which its category only named in a kebab form no word of the entry held:
    # the keyword index reads them where it read the category (its vectors stay of its text:
    # an entry moved under other headings, a notebook's line archived, is not embedded again).
    # Memory files are parsed again when next read (at start: their ``text_key`` is dropped),
    # which fills the column; until then the index holds the categories, as before
    """
    ALTER TABLE entries ADD COLUMN heading TEXT;
    DROP TRIGGER entries_ai;
    DROP TRIGGER entries_ad;
    DROP TRIGGER entries_au;
    DROP VIEW entries_indexed;
    CREATE VIEW entries_indexed AS
        SELECT id, keyword_text(index_text(text, key)) AS text,
            keyword_text(CASE WHEN heading IS NULL THEN category
                         ELSE index_text(heading, NULL) END) AS category,
            keyword_text(tags) AS tags FROM entries;
    CREATE TRIGGER entries_ai AFTER INSERT ON entries BEGIN
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, keyword_text(index_text(new.text, new.key)),
                keyword_text(CASE WHEN new.heading IS NULL THEN new.category
                             ELSE index_text(new.heading, NULL) END),
                keyword_text(new.tags));
    END;
    CREATE TRIGGER entries_ad AFTER DELETE ON entries BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, keyword_text(index_text(old.text, old.key)),
                keyword_text(CASE WHEN old.heading IS NULL THEN old.category
                             ELSE index_text(old.heading, NULL) END),
                keyword_text(old.tags));
    END;
    CREATE TRIGGER entries_au AFTER UPDATE OF text, key, category, tags, heading ON entries
    BEGIN
        INSERT INTO entries_fts(entries_fts, rowid, text, category, tags)
        VALUES ('delete', old.id, keyword_text(index_text(old.text, old.key)),
                keyword_text(CASE WHEN old.heading IS NULL THEN old.category
                             ELSE index_text(old.heading, NULL) END),
                keyword_text(old.tags));
        INSERT INTO entries_fts(rowid, text, category, tags)
        VALUES (new.id, keyword_text(index_text(new.text, new.key)),
                keyword_text(CASE WHEN new.heading IS NULL THEN new.category
                             ELSE index_text(new.heading, NULL) END),
                keyword_text(new.tags));
    END;
    UPDATE files SET text_key = NULL WHERE kind = 'memory';
    """,
    # 28: a memory file's dated line (``- [2026-11-05] …``) is of the user's local day, not of
    # 00:00 UTC (memoryd.ingest.line_date): memory files are parsed again when next read (at
    # start: their ``text_key`` is dropped), which dates their lines anew; and nothing is dated
    # after now (a file's mtime, a line's date or a transcript's time ahead of the clock)
    """
    UPDATE files SET text_key = NULL WHERE kind = 'memory';
    UPDATE entries SET created = CAST(strftime('%s', 'now') AS REAL)
        WHERE created > CAST(strftime('%s', 'now') AS REAL);
    """,
)
#: The keyword index's tokenizer and its arguments, as migration 26 made ``entries_fts``:
#: search reads a text's words with it (Store.tokens, memoryd.store.lexicon).
KEYWORD_TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2", "categories",
                                "L* N* Co So"])
#: The migrations after which existing entries are judged for quarantine again: the kinds.
QUARANTINE_VERSIONS: dict[int, tuple[str, ...] | None] = {9: None, 13: TRANSCRIPT_KINDS}
#: The migration after which files' problems name unreadable lines only.
UNREADABLE_LINES_VERSION = 14
#: The reasons a transcript's problem named before schema 14 for lines left out on purpose.
LEFT_OUT_ON_PURPOSE = ("marker", "wrapper")


def add_functions(db: apsw.Connection) -> None:
    """The SQL functions the schema's view and triggers call: every connection that reads or
    writes the entries needs them."""
    db.create_scalar_function("index_text", cast("apsw.ScalarProtocol", index_text), 2,
                              deterministic=True)
    db.create_scalar_function("keyword_text", cast("apsw.ScalarProtocol", keyword_text), 1,
                              deterministic=True)


def only_unreadable_lines(db: apsw.Connection) -> None:
    """Rewrite the files' problems "skipped lines: 1 invalid_json, 2 wrapper" without the
    lines left out on purpose; a problem of those alone is no problem."""
    changed = []
    for path, error in cast(list[tuple[str, str]], db.execute(
            "SELECT path, error FROM files WHERE error LIKE 'skipped lines: %'").fetchall()):
        reasons = [item for item in error.removeprefix("skipped lines: ").split(", ")
                   if item.partition(" ")[2] not in LEFT_OUT_ON_PURPOSE]
        now = "skipped lines: " + ", ".join(reasons) if reasons else None
        if now != error:
            changed.append((now, path))
    db.executemany("UPDATE files SET error=? WHERE path=?", changed)
