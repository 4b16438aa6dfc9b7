-- The 12-hour drop walks the deliveries' primary key (ids follow enqueue order; see deliveries.ts), so this index
-- was only a B-tree more to write for every queued row.
DROP INDEX IF EXISTS deliveries_by_enqueue_time;
