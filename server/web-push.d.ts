// The package ships no types; only what the panel uses (server/utils/ops/notify/push.ts).
declare module 'web-push' {
  interface PushSubscription {
    endpoint: string
    keys: { p256dh: string; auth: string }
  }
  interface RequestOptions {
    vapidDetails?: { subject: string; publicKey: string; privateKey: string }
    TTL?: number
    urgency?: 'very-low' | 'low' | 'normal' | 'high'
    contentEncoding?: 'aes128gcm' | 'aesgcm'
  }
  interface RequestDetails {
    method: string
    headers: Record<string, string | number>
    body: Buffer | null
    endpoint: string
  }
  const webpush: {
    generateVAPIDKeys(): { publicKey: string; privateKey: string }
    generateRequestDetails(subscription: PushSubscription, payload: string | Buffer, options?: RequestOptions): RequestDetails
  }
  export default webpush
}
