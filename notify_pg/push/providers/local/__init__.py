"""Local servers that speak the providers' protocols, for tests, the bench and staging.

Each listens on loopback over TLS with a certificate of its own test CA (`tls.LocalCa`), checks
every request as the real service would (the JWT, the headers, the payload) and answers an
error on demand: `webpush.LocalPushService` (RFC 8030 with VAPID, its messages kept encrypted
for an independent decryption), `fcm.LocalFcm` (the HTTP v1 ``messages:send`` endpoint and its
OAuth token endpoint) and `apns.LocalApns` (the APNs provider API over HTTP/2). They never
reach the network: the providers are pointed at them by their configuration (``url``,
``ca_file``).
"""
