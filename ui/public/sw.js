// Service worker for web-push notifications of the panel: shows each pushed event.
self.addEventListener('push', (event) => {
  let data = {}
  try {
    data = event.data ? event.data.json() : {}
  } catch {
    data = { body: event.data ? event.data.text() : '' }
  }
  const title = data.title || (data.event ? `Edge panel: ${data.event}` : 'Edge panel')
  const body = data.body || (data.details ? JSON.stringify(data.details) : '')
  event.waitUntil(self.registration.showNotification(title, { body, tag: data.event || undefined }))
})
self.addEventListener('notificationclick', (event) => {
  event.notification.close()
  event.waitUntil(self.clients.openWindow('/'))
})
