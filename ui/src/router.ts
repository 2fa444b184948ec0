import { createRouter, createWebHistory } from 'vue-router'
import { session, loadSession } from './session'

/** How long a link's #section is waited for: the section of a screen often renders only once its data arrived. */
const _HASH_WAIT_MS = 10_000
/** Counts navigations with a #section: a wait that a later one overtook does not scroll. */
let _scrolls = 0

/**
 * The element a #fragment names, once it exists. Without this the router did not
 * scroll at all, and a section shown only after a load (v-if) is not there yet
 * when the screen mounts, so a link such as /security#countries stayed at the top.
 */
function _whenPresent(id: string): Promise<Element | null> {
  const now = document.getElementById(id)
  if (now) return Promise.resolve(now)
  return new Promise((resolve) => {
    const done = (el: Element | null) => {
      observer.disconnect()
      clearTimeout(timer)
      resolve(el)
    }
    const observer = new MutationObserver(() => {
      const el = document.getElementById(id)
      if (el) done(el)
    })
    const timer = setTimeout(() => done(null), _HASH_WAIT_MS)
    observer.observe(document.body, { childList: true, subtree: true })
  })
}

// One chunk per screen: the first screen loads only Vue, the router and the login view.
export const router = createRouter({
  history: createWebHistory(),
  // Only a #section scrolls: other navigations (a filter kept in the address) stay where they are, as before.
  async scrollBehavior(to) {
    if (!to.hash) return false
    const seq = ++_scrolls
    let id = to.hash.slice(1)
    try {
      id = decodeURIComponent(id)
    } catch {
      /* keep it as written */
    }
    const el = await _whenPresent(id)
    // Another #section was asked for meanwhile: only the newest one scrolls.
    if (!el || seq !== _scrolls) return false
    return { el, top: 8 }
  },
  routes: [
    { path: '/login', name: 'login', component: () => import('./views/LoginView.vue'), meta: { public: true, title: 'Sign in' } },
    { path: '/', name: 'dashboard', component: () => import('./views/DashboardView.vue'), meta: { title: 'Dashboard' } },
    { path: '/hosts', name: 'hosts', component: () => import('./views/HostsView.vue'), meta: { title: 'Hosts' } },
    { path: '/hosts/new', name: 'host-new', component: () => import('./views/HostEditView.vue'), meta: { title: 'New host' } },
    { path: '/hosts/:id(\\d+)', name: 'host-edit', component: () => import('./views/HostEditView.vue'), meta: { title: 'Host' } },
    {
      path: '/target-groups',
      name: 'target-groups',
      component: () => import('./views/TargetGroupsView.vue'),
      meta: { title: 'Target groups' },
    },
    {
      path: '/access-lists',
      name: 'access-lists',
      component: () => import('./views/AccessListsView.vue'),
      meta: { title: 'Access lists' },
    },
    { path: '/streams', name: 'streams', component: () => import('./views/StreamsView.vue'), meta: { title: 'Streams' } },
    { path: '/import', name: 'import', component: () => import('./views/ImportView.vue'), meta: { title: 'Import' } },
    {
      path: '/certificates',
      name: 'certificates',
      component: () => import('./views/CertificatesView.vue'),
      meta: { title: 'Certificates' },
    },
    {
      path: '/dns-providers',
      name: 'dns-providers',
      component: () => import('./views/DnsProvidersView.vue'),
      meta: { title: 'DNS providers' },
    },
    { path: '/security', name: 'security', component: () => import('./views/SecurityView.vue'), meta: { title: 'Security' } },
    { path: '/logs', name: 'logs', component: () => import('./views/LogsView.vue'), meta: { title: 'Logs' } },
    { path: '/revisions', name: 'revisions', component: () => import('./views/RevisionsView.vue'), meta: { title: 'Revisions' } },
    { path: '/nodes', name: 'nodes', component: () => import('./views/NodesView.vue'), meta: { title: 'Proxy nodes' } },
    { path: '/tokens', name: 'tokens', component: () => import('./views/TokensView.vue'), meta: { title: 'API tokens' } },
    { path: '/settings', name: 'settings', component: () => import('./views/SettingsView.vue'), meta: { title: 'Settings' } },
    { path: '/:rest(.*)*', name: 'not-found', component: () => import('./views/NotFoundView.vue'), meta: { title: 'Not found' } },
  ],
})

router.beforeEach(async (to) => {
  if (!session.loaded)
    await loadSession().catch(() => {
      session.loaded = true
    })
  if (to.meta.public) return true
  if (!session.user) return { name: 'login', query: to.fullPath !== '/' ? { rd: to.fullPath } : {} }
  return true
})

router.afterEach((to) => {
  document.title = `${(to.meta.title as string) ?? 'Panel'} · Edge panel`
})
