#!/bin/sh
# Gives compose.yaml's daemon something to sync into: on the reference server (`podman-compose up -d redis server`
# first), an account, an Active Dynamic campaign that dials all day and an API key with the Campaign Number Admin and
# Campaign Reader roles, made through the console API with .env's CONSOLE_TOKEN. Writes DIALER_ACCOUNT_ID,
# CAMPAIGN_ID and DIALER_API_TOKEN into .env. Needs curl.
set -eu
cd "$(dirname "$0")"
[ -f .env ] || { echo "no .env here: cp .env.example .env and set CONSOLE_TOKEN" >&2; exit 1; }
. ./.env
[ -n "${CONSOLE_TOKEN:-}" ] || { echo ".env: set CONSOLE_TOKEN" >&2; exit 1; }
base="http://127.0.0.1:${SERVER_PORT:-4000}"
i=0
until curl -fsS -o /dev/null "$base/health" 2>/dev/null; do
  i=$((i + 1)); [ "$i" -lt 60 ] || { echo "the reference server does not answer at $base/health" >&2; exit 1; }; sleep 1
done
post() { curl -fsS -X POST -H "Authorization: Bearer $CONSOLE_TOKEN" -H 'Content-Type: application/json' -d "$2" "$base/console$1"; }
# The records' first key: {"id":"…",…}; the key's token: "token":"…".
id() { sed -n 's/^{"id":"\([^"]*\)".*/\1/p'; }
account=$(post /accounts '{"name":"Compose","timezone":"America/New_York"}' | id)
campaign=$(post "/accounts/$account/campaigns" '{"name":"From contacts.csv","type":"Dynamic","state":"Active","dialer":{"mode":"Power","agents":4,"maxAttempts":1,"callingHours":{"from":"00:00","to":"23:59","days":["Mon","Tue","Wed","Thu","Fri","Sat","Sun"]}}}' | id)
token=$(post "/accounts/$account/apiKeys" '{"name":"campaign-sync","roles":["CampaignNumberAdmin","CampaignReader"]}' | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
[ -n "$account" ] && [ -n "$campaign" ] && [ -n "$token" ] || { echo "the console API did not answer as expected" >&2; exit 1; }
tmp=$(mktemp .env.XXXXXX)
grep -v -e '^DIALER_ACCOUNT_ID=' -e '^CAMPAIGN_ID=' -e '^DIALER_API_TOKEN=' .env > "$tmp" || true
printf 'DIALER_ACCOUNT_ID=%s\nCAMPAIGN_ID=%s\nDIALER_API_TOKEN=%s\n' "$account" "$campaign" "$token" >> "$tmp"
chmod 600 "$tmp" && mv "$tmp" .env
echo "account $account, campaign $campaign and a Campaign Number Admin + Reader key written to .env"
