-- Argo CD health of the trellis.dev kinds (Corpus, IndexProfile,
-- RetrievalRoute), from the conditions the operator sets on every kind in
-- kstatus' convention: Ready, and Reconciling and Stalled while true.
local hs = {status = "Progressing", message = "waiting for the Trellis operator"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local function condition(kind)
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end
-- Before the generation check: a paused object that is then edited has
-- an observedGeneration behind its generation, and is still Suspended.
local paused = condition("Paused")
if paused ~= nil and paused.status == "True" then
  return {status = "Suspended", message = paused.message}
end
local generation = obj.metadata.generation
if generation ~= nil and (obj.status.observedGeneration == nil or obj.status.observedGeneration < generation) then
  hs.message = "waiting for the operator to observe generation " .. generation
  return hs
end
local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  return {status = "Degraded", message = stalled.message}
end
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  return {status = "Progressing", message = reconciling.message}
end
local ready = condition("Ready")
if ready ~= nil and ready.status == "True" then
  -- A Corpus whose documents partly failed serves, and says so.
  local degraded = condition("Degraded")
  if degraded ~= nil and degraded.status == "True" then
    return {status = "Healthy", message = ready.message .. "; " .. degraded.message}
  end
  return {status = "Healthy", message = ready.message}
end
if ready ~= nil then
  return {status = "Degraded", message = ready.message}
end
return hs
