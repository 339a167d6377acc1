"""What the benchmark sends and what its baselines answer, shared by the seed, the site
and the driver.

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
MINT_BODY = {"user_group_id": TARGET_ID}
# A person of the target customer (CONTRACT section 7), unchanged from mint to mint. The
# attribute repeats the group's own value, so the variables, and every verification
# view's answer, stay the same: the rows differ by the end user's work alone.
END_USER = {
    "id": "bench-person",
    "display_name": "Bench Person",
    "attributes": {"region": "eu-west"},
}
MINT_BODY_END_USER = {**MINT_BODY, "end_user": END_USER}

# The target's variables: what an embed token for it grants (a top-level group minted
# without params has its own properties), and what every verification view answers.
VARIABLES = TARGET_PROPERTIES

# What the authtoken baseline answers: the shape and size of the app's get of the target
# (bench/driving.py checks the shape against the app's answer before the rounds).
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
        "parent_user_group_id": None,
        "computed_properties": TARGET_PROPERTIES,
        "computed_mapping": TARGET_MAPPING,
    },
}
