# PostgreSQL's own counters for the benchmark (scripts/bench-run),
# on the server in $HERALD_PG_DIR (scripts/pg).

tck=$(getconf CLK_TCK)

# CPU seconds of the PostgreSQL server so far: the postmaster, the children it
# reaped (backends that ended) and the ones alive (backends, checkpointer, WAL
# writer). A consistent reading: a backend reaped between reading the
# postmaster (its reaped children) and the live children would count nowhere
# or twice, so the reading is taken again until every child read is still
# there after it.
pg_cpu() {
  local pm ticks pid f pids after ok
  pm=$(head -1 "$HERALD_PG_DIR/data/postmaster.pid")
  for _ in $(seq 1 50); do
    pids=$(pgrep -P "$pm" | sort || true)
    ticks=0 ok=1
    for pid in $pids; do
      f=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) || { ok=0; break; }
      ticks=$((ticks + $(awk '{ print $12 + $13 }' <<<"$f")))
    done
    f=$(sed 's/.*) //' "/proc/$pm/stat")
    ticks=$((ticks + $(awk '{ print $12 + $13 + $14 + $15 }' <<<"$f")))
    after=$(pgrep -P "$pm" | sort || true)
    [ "$ok" = 1 ] && [ -z "$(comm -23 <(echo "$pids") <(echo "$after"))" ] && break
  done
  awk -v t="$ticks" -v k="$tck" 'BEGIN { printf "%.2f", t / k }'
}

pg_children() { pgrep -c -P "$(head -1 "$HERALD_PG_DIR/data/postmaster.pid")"; }
# Until the backends of sessions that ended are reaped (at most 10 s): their CPU counts once they are.
pg_reaped() { for _ in $(seq 1 100); do [ "$(pg_children)" -le "$1" ] && break; sleep 0.1; done; }
pg_log_size() { stat -c %s "$HERALD_PG_DIR/server.log" 2>/dev/null || echo 0; }
# Autovacuum's runs logged since byte OFFSET of the server's log.
autovacuums_since() { tail -c +$(($1 + 1)) "$HERALD_PG_DIR/server.log" 2>/dev/null | grep -c 'automatic \(vacuum\|analyze\) of table' || true; }
# The WAL written so far on $DATABASE_URL's server: records, full-page
# images, bytes (pg_stat_wal), and where it was written to (an LSN).
pg_wal() { psql -qAtX -F ' ' "$DATABASE_URL" -c "SELECT wal_records, wal_fpi, wal_bytes, pg_current_wal_lsn() FROM pg_stat_wal"; }
