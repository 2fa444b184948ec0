import { createRouter, createWebHistory } from 'vue-router'
import { session, loadSession } from './session'

// One chunk per screen: the first screen loads only Vue, the router and the login view.
export const router = createRouter({
  history: createWebHistory(),
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
