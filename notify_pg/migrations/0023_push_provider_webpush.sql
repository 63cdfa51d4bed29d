-- Web Push (RFC 8030) in browsers is a provider of its own, beside the UnifiedPush
-- distributors that speak the same protocol (notify_pg.push.providers.webpush): a
-- registration's provider may be 'webpush'; its token is the browser's subscription JSON.
ALTER TABLE {schema}.push_registrations DROP CONSTRAINT push_registrations_provider_check;
ALTER TABLE {schema}.push_registrations ADD CONSTRAINT push_registrations_provider_check
    CHECK (provider IN ('apns', 'fcm', 'unifiedpush', 'webpush', 'wns'));
