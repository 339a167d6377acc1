from django.urls import path

from example_project.dashboards import customer_site, views, webhook_receiver

app_name = "dashboards"

urlpatterns = [
    # The customer's side: its page and its backend's token minting.
    path("demo/", customer_site.customer_site, name="customer-site"),
    path("demo/embed-token/", customer_site.mint_embed_token, name="customer-embed-token"),
    # Its webhook receiver (signature verified), and the events it took, newest first.
    path("demo/webhook/", webhook_receiver.receive, name="customer-webhook"),
    path("demo/webhook/events/", webhook_receiver.recent, name="customer-webhook-events"),
    # The host's side: the framed dashboard and its data endpoint.
    path("embed/dashboard/", views.embed_dashboard, name="embed-dashboard"),
    path("embed/api/sales/", views.SalesDataView.as_view(), name="sales-data"),
]
