/** The browser's location as React state (the dashboard's routes: `routes.ts`). */
import { useEffect, useState } from "react"

/** The current location, updated on navigation and on the browser's back and forward. */
export const useLocation = () => {
  const [location, setLocation] = useState(() => ({
    pathname: window.location.pathname,
    search: window.location.search
  }))
  useEffect(() => {
    const update = () => setLocation({ pathname: window.location.pathname, search: window.location.search })
    window.addEventListener("popstate", update)
    return () => window.removeEventListener("popstate", update)
  }, [])
  return location
}
