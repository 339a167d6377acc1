"""The request the benchmark sends, shared by the seeder, the baselines and the driver.

A dashboard asks for the group of one of its customers on every render, with the full
body (name, mapping, properties), which get-or-create ignores once the group exists.
"""

TARGET_ID = "dashboard-customer-0042"
TARGET_NAME = "Customer 42 (Acme Analytics)"
TARGET_MAPPING = {"sales": "ds-1001", "marketing": "ds-1002", "support": "ds-1003"}
TARGET_PROPERTIES = {"region": "eu-west", "plan": "enterprise", "seats": 250}

GET_BODY = {
    "user_group_id": TARGET_ID,
    "name": TARGET_NAME,
    "mapping": TARGET_MAPPING,
    "properties": TARGET_PROPERTIES,
}

# What baseline (1) answers: the shape and size of a get-or-create answer for the target.
CONSTANT_RESPONSE = {
    "success": 1,
    "new_user_group": False,
    "user_group": {
        "team_id": 1000,
        "token": "ugt_" + "x" * 43,
        "name": TARGET_NAME,
        "provided_id": TARGET_ID,
        "properties": TARGET_PROPERTIES,
        "mapping": TARGET_MAPPING,
    },
}

# A group at depth 5 of the hierarchy, under four ancestors that each set properties and
# map schemas: its get reads them all (one more query, whatever the depth).
DEEP_ANCESTORS = [f"bench-level-{level}" for level in range(1, 5)]
DEEP_ID = "dashboard-team-0042-depth5"
DEEP_BODY = {**GET_BODY, "user_group_id": DEEP_ID, "parent_user_group_id": DEEP_ANCESTORS[-1]}
