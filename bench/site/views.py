"""A host's dashboard endpoint, for the embed-token scenarios of the benchmark: a DRF
view behind ``EmbedTokenAuthentication`` answering the variables the token grants
(what a dashboard's data query would filter on)."""

from rest_framework.response import Response
from rest_framework.views import APIView

from usergroups.auth.embed import EmbedTokenAuthentication
from usergroups.auth.permissions import HasEmbedToken


class EmbedVariablesView(APIView):
    authentication_classes = [EmbedTokenAuthentication]
    permission_classes = [HasEmbedToken]

    def get(self, request):
        return Response({"success": 1, "variables": request.auth.variables})
