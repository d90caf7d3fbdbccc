-- The entries of the applications' element indexes (ObjectIndex.arrayElements): for each live
-- object of an indexed collection, one row per distinct value of the indexed field among its
-- array's elements (a User in conversations c1 and c2 has the rows c1 and c2).
--
-- Why a table and not an index on psync_objects: the records such searches find are rewritten
-- often for reasons that do not change the indexed values (RChat raises unread counts in its
-- User records). Every rewrite of an object makes a new row version, and an index on the
-- object's body holds an entry for each version until VACUUM removes the dead ones; a search
-- then visits every version since the last VACUUM (under `psync-bench ingest`, 1.97 ms per
-- search and rising with the time since). These rows are rewritten only when the values change,
-- so a search reads the live entries of its value and then each object by its key.
--
-- The server creates, per declared index, triggers on psync_objects that call
-- psync_element_entries_sync (ObjectIndex.statements), and fills the table for the objects
-- stored before; the update trigger fires only when the indexed values differ.
CREATE TABLE psync_element_entries (
    index_name text NOT NULL,
    value jsonb NOT NULL,
    collection text NOT NULL,
    id text NOT NULL,
    PRIMARY KEY (index_name, value, collection, id)
);

-- Arguments: the index's name and the jsonpath of the values (ObjectIndex.elementsPath).
-- Removes the entries of values the object no longer has and adds those it gained; the entries
-- of its old values are found through the primary key (an object's entries mirror its body).
CREATE FUNCTION psync_element_entries_sync() RETURNS trigger
LANGUAGE plpgsql
AS $$
DECLARE
    ix text := TG_ARGV[0];
    path jsonpath := TG_ARGV[1]::jsonpath;
    old_values jsonb[] := '{}';
    new_values jsonb[] := '{}';
BEGIN
    IF TG_OP <> 'INSERT' AND OLD.body IS NOT NULL THEN
        old_values := ARRAY(SELECT DISTINCT v FROM jsonb_path_query(OLD.body, path) AS v);
    END IF;
    IF TG_OP <> 'DELETE' AND NEW.body IS NOT NULL THEN
        new_values := ARRAY(SELECT DISTINCT v FROM jsonb_path_query(NEW.body, path) AS v);
    END IF;
    IF cardinality(old_values) > 0 THEN
        DELETE FROM psync_element_entries e
        WHERE e.index_name = ix
          AND e.value = ANY (ARRAY(SELECT v FROM unnest(old_values) AS v WHERE NOT v = ANY (new_values)))
          AND e.collection = OLD.collection AND e.id = OLD.id;
    END IF;
    IF cardinality(new_values) > 0 THEN
        INSERT INTO psync_element_entries (index_name, value, collection, id)
        SELECT ix, v, NEW.collection, NEW.id
        FROM unnest(new_values) AS v WHERE NOT v = ANY (old_values)
        ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
