from django.urls import path

from . import views

app_name = "dashboards"

urlpatterns = [
    path("demo/", views.customer_site, name="customer-site"),
    path("embed/dashboard/", views.embed_dashboard, name="embed-dashboard"),
    path("embed/api/sales/", views.SalesDataView.as_view(), name="sales-data"),
]
