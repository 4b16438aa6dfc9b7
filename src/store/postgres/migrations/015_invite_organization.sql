-- The organization an invitation link was made for: it accepts that organization's memberships of its user only,
-- and only that organization's new memberships revoke it, so one organization adding an e-mail neither accepts nor
-- blocks another's invitation. NULL: a link made before, which accepts every membership of its user, as it did.
ALTER TABLE invites ADD COLUMN organization_id text COLLATE "C";
