import { createApp } from 'vue'
import App from './App.vue'
import { router } from './router'
import { setUnauthorizedHandler } from './api'
import { session } from './session'
import { startTheme } from './theme'
import { startCardLabels } from './cards'
import './style.css'

// Before the first render, so a dark screen never flashes light.
startTheme()

// A session that expires while a screen is open sends the operator back to login, then here.
setUnauthorizedHandler(() => {
  session.user = null
  const here = router.currentRoute.value
  if (here.name !== 'login') router.replace({ name: 'login', query: { rd: here.fullPath } })
})

const root = document.getElementById('app')!
startCardLabels(root)
createApp(App).use(router).mount(root)
