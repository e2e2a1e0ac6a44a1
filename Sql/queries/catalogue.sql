-- The notification catalogue (actions, categories and their localized labels) and the
-- record of the config documents apps were given (config_documents).
-- Statements of this file are run by Sources/Store/ConfigStore.swift.

-- name: categories
-- Every category with its options, its actions in their order (category_actions.position)
-- and the apps it is for (NULL: every app).
SELECT c.id, c.options,
       coalesce(array_agg(ca.action_id ORDER BY ca.position) FILTER (WHERE ca.action_id IS NOT NULL), '{}'),
       c.apps
FROM categories c LEFT JOIN category_actions ca ON ca.category_id = c.id
GROUP BY c.id, c.options, c.apps
