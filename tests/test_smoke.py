from tests.support.api import API_URL


def test_get_or_create_then_rotate(api_client):
    created = api_client.generic(
        "GET", API_URL, '{"user_group_id": "acme"}', content_type="application/json"
    )
    assert created.status_code == 200, created.content
    body = created.json()
    assert body["new_user_group"] is True
    token = body["user_group"]["token"]
    rotated = api_client.post(API_URL, {"current_token": token}, format="json")
    assert rotated.status_code == 200
    assert rotated.json()["user_group"]["token"] != token
