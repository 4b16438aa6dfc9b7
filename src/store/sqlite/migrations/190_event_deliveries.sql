-- A published event's deliveries found from the event, not from an index entry per delivery.
-- The delivery_log_by_event index (event_id, connector_id) took an entry for every delivery, written and pruned one by
-- one, and a page more in almost every group commit: with it, the end-to-end rate with the delivery log was a median
-- 93 % of the rate without the log; with the deliveries named by their event, 96 % (docs/benchmarks-log.md,
-- 2026-11-29). What "where is event X?" and :replay's onlyUndelivered need of it is found as follows now:
--
-- * The deliveries of a published event (trigger 0, queued in the transaction that stores the event, one insert, so
--   their ids are consecutive) are named by the event's row: first_delivery and last_delivery, the first and last of
--   their queue ids, which are their log rows' ids too (repos/deliveries.ts sets them as it queues them). NULL: the
--   event was queued for no connector.
-- * Every other delivery (:sync, :resend, :replay, a TEST) keeps its entry in the index, now partial.
-- * A published event no longer in the history (its retention, or its device deleted) has its deliveries found
--   among its connector's (delivery_log_by_connector): slower, and only for a log kept longer than the history.
ALTER TABLE events ADD COLUMN first_delivery INTEGER;
ALTER TABLE events ADD COLUMN last_delivery INTEGER;

-- The events of the deliveries already queued or logged.
UPDATE events SET first_delivery = r.lo, last_delivery = r.hi
FROM (
  SELECT event_id, min(id) AS lo, max(id) AS hi FROM (
    SELECT event_id, id FROM delivery_log WHERE trigger = 0
    UNION ALL
    SELECT event_id, id FROM deliveries WHERE trigger = 0
  ) GROUP BY event_id
) AS r
WHERE events.id = r.event_id;

DROP INDEX delivery_log_by_event;
CREATE INDEX delivery_log_by_event ON delivery_log(event_id, connector_id) WHERE trigger <> 0;
