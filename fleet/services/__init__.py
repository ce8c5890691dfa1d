"""The portal's rules, between the views and the Fleet API client.

Views call these functions; they never import `fleet.api.client` themselves.
"""
